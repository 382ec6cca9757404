/**
 * Decoding of msgpack *responses* (for clients and tests): numpy maps come back as typed arrays
 * (1-D) or NdArrays, float16 as Uint16Array bits, so a decoded response equals what was encoded.
 */

import { Unpackr } from "msgpackr/unpack";
import { type DType, DTYPE_ITEMSIZE, NdArray, type TypedArray } from "./ndarray.ts";
import "./msgpack_decode.ts"; // registers extension 78 with msgpackr

/** Maps stay Maps here: the numpy map has bin keys, which plain objects cannot hold. */
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: false, int64AsType: "number" });
const latin1 = new TextDecoder("latin1");

const VIEWS: Record<DType, (b: ArrayBuffer) => TypedArray> = {
  "<f4": (b) => new Float32Array(b),
  "<f2": (b) => new Uint16Array(b),
  "<f8": (b) => new Float64Array(b),
  "|i1": (b) => new Int8Array(b),
  "|u1": (b) => new Uint8Array(b),
  "<i2": (b) => new Int16Array(b),
  "<u2": (b) => new Uint16Array(b),
  "<i4": (b) => new Int32Array(b),
  "<u4": (b) => new Uint32Array(b),
};

/** The numpy map as a typed array or NdArray, or undefined when `m` is not one. */
function fromNumpyMap(m: Map<unknown, unknown>): TypedArray | NdArray | undefined {
  if (m.size !== 5) return undefined;
  const f = new Map<string, unknown>();
  for (const [k, v] of m) if (k instanceof Uint8Array) f.set(latin1.decode(k), v);
  const type = f.get("type") as DType;
  const shape = f.get("shape");
  const data = f.get("data");
  if (f.get("nd") !== true || !(type in DTYPE_ITEMSIZE) || !Array.isArray(shape)) return undefined;
  if (!(data instanceof Uint8Array)) return undefined;
  const arr = VIEWS[type](new Uint8Array(data).buffer); // copy: aligned, independent of the body
  if (shape.length === 1 && type !== "<u2") return arr;
  return new NdArray(arr, shape as number[], type);
}

function convert(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(convert);
  if (!(v instanceof Map)) return v;
  const nd = fromNumpyMap(v);
  if (nd) return nd;
  const o: Record<string, unknown> = {};
  for (const [k, x] of v) {
    // defineProperty: a "__proto__" key must stay data, not replace the prototype.
    Object.defineProperty(o, String(k), { value: convert(x), enumerable: true, writable: true });
  }
  return o;
}

/** Decode a msgpack response body produced by this service (trusted input). */
export function decodeMsgpackResponse(bytes: Uint8Array): unknown {
  return convert(unpackr.unpack(bytes));
}
