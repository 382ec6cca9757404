/** Decoding of untrusted msgpack: structural pre-scan, then msgpackr. */

import { addExtension, Unpackr } from "msgpackr/unpack";
import { invalidInput, ServiceError } from "../errors.ts";
import { decodeExt78 } from "./ext78.ts";
import { EXT_TYPED_ARRAY, scanMsgpack } from "./msgpack_scan.ts";
import type { ScanBounds } from "./json_scan.ts";

// msgpackr keeps extensions in one process-wide table; type 78 is not one of its own.
addExtension({ type: EXT_TYPED_ARRAY, unpack: decodeExt78 });

/**
 * Maps become plain objects (records off: they would let a client define structures), int64 becomes
 * a number, and `bin` values are views into the body (no copy).
 */
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" });

/** Decode a msgpack request body after {@link scanMsgpack} proved it safe; errors are INVALID_INPUT. */
export function decodeMsgpack(bytes: Uint8Array, bounds: ScanBounds): unknown {
  scanMsgpack(bytes, bounds);
  // A Node Buffer body would make every decoded `bin` a Buffer, whose slice() is a view, not a
  // copy: hand msgpackr a plain Uint8Array over the same memory instead.
  const plain = bytes.constructor === Uint8Array
    ? bytes
    : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  try {
    return unpackr.unpack(plain);
  } catch (err) {
    if (err instanceof ServiceError) throw err; // from the ext-78 decoder
    throw invalidInput(`malformed msgpack: ${err instanceof Error ? err.message : String(err)}`);
  }
}
