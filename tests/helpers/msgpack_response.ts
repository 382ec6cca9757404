/**
 * Decoding of msgpack *responses* for tests: numpy maps come back as typed arrays (1-D) or NdArrays,
 * float16 as Uint16Array bits, so a decoded response equals what the server encoded. The numpy
 * maps are read by the client's decoder (client/numpy.ts), the only one.
 */

import { Unpackr } from "msgpackr/unpack";
import { isKnownDtype, numpyElements, readNumpyMap } from "#client/numpy.ts";
import { type DType, NdArray, type TypedArray } from "#shared/codec/ndarray.ts";
import "#shared/codec/msgpack_decode.ts"; // registers extension 78 with msgpackr

/** Maps stay Maps here: the numpy map has bin keys, which plain objects cannot hold. */
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: false, int64AsType: "number" });

/** The numpy map as a typed array or NdArray, or undefined when `m` is not one. */
function fromNumpyMap(m: Map<unknown, unknown>): TypedArray | NdArray | undefined {
  const nd = readNumpyMap(m);
  if (!nd || !isKnownDtype(nd.type)) return undefined;
  const arr = numpyElements(nd) as TypedArray;
  if (nd.shape.length === 1 && nd.type !== "<u2") return arr;
  return new NdArray(arr, nd.shape, nd.type as DType);
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
