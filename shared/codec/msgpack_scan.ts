// Own code: msgpackr trusts declared lengths; no package checks them before allocating.
/**
 * Structural pre-scan of untrusted msgpack, before any decoder allocates.
 *
 * msgpackr trusts declared lengths (a 5-byte body can declare a 4-billion-element array) and
 * recurses once per nesting level. This scan walks the bytes iteratively, checks every declared
 * length against the bytes that remain, bounds the depth and the number of values, only admits
 * extension type 78 (typed
 * arrays; msgpackr's own extensions such as records or RegExp are refused) and requires string map
 * keys. After it passes, decoding is bounded by the body size.
 */

import { invalidInput, type ServiceError } from "../errors.ts";
import { tooDeep, tooManyKeys, tooManyValues } from "./limits.ts";
import type { ScanBounds } from "./json_scan.ts";

/** msgpack extension type of typed arrays in requests (docs/api.md). */
export const EXT_TYPED_ARRAY = 78;

function fail(at: number, why: string): ServiceError {
  return invalidInput(`malformed msgpack at byte ${at}: ${why}`);
}

/**
 * Validate the structure of a msgpack document against `bounds` (depth, values, keys per map);
 * throws INVALID_INPUT when it is unsafe or broken.
 */
export function scanMsgpack(bytes: Uint8Array, bounds: ScanBounds, strictUtf8 = false): void {
  const { maxDepth, maxValues, maxObjectKeys } = bounds;
  const end = bytes.length;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Per open container: values still to read (maps count keys and values), and whether it is a map.
  const left: number[] = [];
  const isMap: boolean[] = [];
  let depth = 0;
  let pos = 0;
  let values = 0;

  /** Declared size of a str/bin/ext payload or a container, read big-endian after the type byte. */
  const len = (at: number, width: 1 | 2 | 4): number => {
    if (at + 1 + width > end) throw fail(at, "truncated length field");
    return width === 1
      ? bytes[at + 1]
      : width === 2
      ? view.getUint16(at + 1)
      : view.getUint32(at + 1);
  };

  for (;;) {
    if (pos >= end) throw fail(pos, "unexpected end of data (truncated body)");
    if (++values > maxValues) throw tooManyValues(maxValues);
    const at = pos;
    const b = bytes[pos];
    if (depth > 0 && isMap[depth - 1] && left[depth - 1] % 2 === 0) {
      // Key position: msgpackr turns maps into objects, and our schemas only have string keys.
      const isStr = (b >= 0xa0 && b <= 0xbf) || b === 0xd9 || b === 0xda || b === 0xdb;
      if (!isStr) throw fail(at, `map key must be a string (found type byte 0x${hex(b)})`);
    }
    let count = -1; // > -1 when this value opens a container
    let map = false;
    let size = 0; // total bytes of a scalar value
    if (b <= 0x7f || b >= 0xe0) size = 1; // fixints
    else if (b <= 0x8f) {
      count = (b & 0x0f) * 2;
      map = true;
      size = 1;
    } else if (b <= 0x9f) {
      count = b & 0x0f;
      size = 1;
    } else if (b <= 0xbf) size = 1 + (b & 0x1f);
    else {
      switch (b) {
        case 0xc0:
        case 0xc2:
        case 0xc3:
          size = 1;
          break;
        case 0xc1:
          throw fail(at, "byte 0xc1 is never used in msgpack");
        case 0xc4:
        case 0xd9:
          size = 2 + len(at, 1);
          break;
        case 0xc5:
        case 0xda:
          size = 3 + len(at, 2);
          break;
        case 0xc6:
        case 0xdb:
          size = 5 + len(at, 4);
          break;
        case 0xc7:
        case 0xc8:
        case 0xc9: {
          const w = b === 0xc7 ? 1 : b === 0xc8 ? 2 : 4;
          size = 2 + w + len(at, w);
          checkExtType(bytes, at, at + 1 + w, end);
          break;
        }
        case 0xca:
          size = 5;
          break;
        case 0xcb:
          size = 9;
          break;
        case 0xcc:
        case 0xd0:
          size = 2;
          break;
        case 0xcd:
        case 0xd1:
          size = 3;
          break;
        case 0xce:
        case 0xd2:
          size = 5;
          break;
        case 0xcf:
        case 0xd3:
          size = 9;
          break;
        case 0xd4:
        case 0xd5:
        case 0xd6:
        case 0xd7:
        case 0xd8:
          size = 2 + (1 << (b - 0xd4));
          checkExtType(bytes, at, at + 1, end);
          break;
        case 0xdc:
          count = len(at, 2);
          size = 3;
          break;
        case 0xdd:
          count = len(at, 4);
          size = 5;
          break;
        case 0xde:
          count = len(at, 2) * 2;
          map = true;
          size = 3;
          break;
        default: // 0xdf
          count = len(at, 4) * 2;
          map = true;
          size = 5;
      }
    }
    if (size > end - pos) {
      throw fail(at, `value declares ${size} bytes but only ${end - pos} remain`);
    }
    if (strictUtf8 && isStrType(b)) checkUtf8(bytes, at, b, size);
    pos += size;
    if (count > 0) {
      // Every element takes at least one byte: a larger count is a lie (a "bomb").
      if (count > end - pos) {
        const what = map ? `map of ${count / 2} entries` : `array of ${count} elements`;
        throw fail(at, `${what} cannot fit in the ${end - pos} bytes that remain`);
      }
      if (depth >= maxDepth) throw tooDeep(maxDepth);
      if (map && count / 2 > maxObjectKeys) throw tooManyKeys(maxObjectKeys);
      left[depth] = count;
      isMap[depth] = map;
      depth++;
      continue;
    }
    // A complete value: close every container it completes.
    while (depth > 0 && --left[depth - 1] === 0) depth--;
    if (depth === 0) break;
  }
  if (pos !== end) throw fail(pos, `${end - pos} trailing bytes after the document`);
}

/** Only extension 78 (typed arrays) is accepted; the type byte sits at `typeAt`. */
function checkExtType(bytes: Uint8Array, at: number, typeAt: number, end: number): void {
  if (typeAt >= end) throw fail(at, "truncated extension header");
  const type = (bytes[typeAt] << 24) >> 24; // ext types are signed
  if (type !== EXT_TYPED_ARRAY) {
    throw fail(
      at,
      `extension type ${type} is not supported (only ${EXT_TYPED_ARRAY}, typed arrays)`,
    );
  }
}

/** True for the str types (fixstr, str8/16/32). */
function isStrType(b: number): boolean {
  return (b >= 0xa0 && b <= 0xbf) || b === 0xd9 || b === 0xda || b === 0xdb;
}

const strictDecoder = new TextDecoder("utf-8", { fatal: true });

/** Throw INVALID_INPUT when the str value at `at` (type byte `b`, `size` bytes) is not UTF-8. */
function checkUtf8(bytes: Uint8Array, at: number, b: number, size: number): void {
  const header = b <= 0xbf ? 1 : b === 0xd9 ? 2 : b === 0xda ? 3 : 5;
  try {
    strictDecoder.decode(bytes.subarray(at + header, at + size));
  } catch {
    throw fail(at, "string is not valid UTF-8");
  }
}

function hex(b: number): string {
  return b.toString(16).padStart(2, "0");
}
