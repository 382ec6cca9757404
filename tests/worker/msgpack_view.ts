/** Test helper: decode a msgpack response into plain objects (bin map keys become strings). */
import { Unpackr } from "msgpackr/unpack";
import type { Json } from "./harness.ts";

const unpackr = new Unpackr({ mapsAsObjects: false, useRecords: false });
const utf8 = new TextDecoder();

function plain(v: unknown): unknown {
  if (v instanceof Map) {
    const o: Record<string, unknown> = {};
    for (const [k, val] of v) o[k instanceof Uint8Array ? utf8.decode(k) : String(k)] = plain(val);
    return o;
  }
  if (Array.isArray(v)) return v.map(plain);
  return v;
}

/** Decode msgpack bytes; numpy-style arrays come out as `{nd, type, kind, shape, data}`. */
export function decodeMsgpackView(bytes: Uint8Array): Json {
  return plain(unpackr.unpack(bytes));
}
