/**
 * msgpack extension type 78: a typed array in a request.
 * Payload: `dtype '|' comma-separated shape '|' raw little-endian bytes`, e.g. `<f4|3|` + 12 bytes.
 */

import { invalidInput } from "../errors.ts";
import { float16ToFloat32 } from "./float16.ts";
import { bytesOf, dtypeOf, NdArray, type TypedArray } from "./ndarray.ts";

const BAR = 0x7c; // '|'

/** How each accepted dtype becomes a typed array (from an aligned copy of its bytes). */
const READERS: Record<string, { size: number; read: (b: ArrayBuffer, n: number) => TypedArray }> = {
  "<f4": { size: 4, read: (b, n) => new Float32Array(b, 0, n) },
  // Requests carry float16 only as data to compute with: widen to float32 at once.
  "<f2": { size: 2, read: (b, n) => float16ToFloat32(new Uint16Array(b, 0, n)) },
  "<f8": { size: 8, read: (b, n) => new Float64Array(b, 0, n) },
  "|i1": { size: 1, read: (b, n) => new Int8Array(b, 0, n) },
  "|u1": { size: 1, read: (b, n) => new Uint8Array(b, 0, n) },
  "|b1": { size: 1, read: (b, n) => new Uint8Array(b, 0, n) },
  "<i2": { size: 2, read: (b, n) => new Int16Array(b, 0, n) },
  // A bare Uint16Array means float16 bits in this service, so real uint16 data is widened.
  "<u2": { size: 2, read: (b, n) => Int32Array.from(new Uint16Array(b, 0, n)) },
  "<i4": { size: 4, read: (b, n) => new Int32Array(b, 0, n) },
  "<u4": { size: 4, read: (b, n) => new Uint32Array(b, 0, n) },
  // int64 (numpy's default integer, e.g. token ids) as exact doubles; beyond 2^53 is refused.
  "<i8": { size: 8, read: (b, n) => int64ToFloat64(new BigInt64Array(b, 0, n)) },
  "<u8": { size: 8, read: (b, n) => int64ToFloat64(new BigUint64Array(b, 0, n)) },
};

function int64ToFloat64(src: BigInt64Array | BigUint64Array): Float64Array {
  const out = new Float64Array(src.length);
  for (let i = 0; i < src.length; i++) {
    const v = Number(src[i]);
    if (!Number.isSafeInteger(v)) throw bad(`int64 value ${src[i]} is beyond ±2^53`);
    out[i] = v;
  }
  return out;
}

function bad(why: string) {
  return invalidInput(`typed array (msgpack ext 78): ${why}`);
}

/** Decode an ext-78 payload: rank 1 → typed array, rank ≥ 2 → NdArray, rank 0 → number. */
export function decodeExt78(payload: Uint8Array): TypedArray | NdArray | number {
  // The dtype may itself start with '|' (`|u1`), so the separator is searched from index 1.
  const a = payload.indexOf(BAR, 1);
  const b = a < 0 ? -1 : payload.indexOf(BAR, a + 1);
  if (a < 0 || b < 0 || a > 8) throw bad("payload is not 'dtype|shape|bytes'");
  let dtype = ascii(payload.subarray(0, a));
  if (dtype.startsWith(">")) throw bad(`big-endian dtype ${dtype} is not supported; send '<'`);
  if (/^[<=]\w1$/.test(dtype)) dtype = "|" + dtype.slice(1); // byte order is moot for 1 byte
  const reader = READERS[dtype];
  if (!reader) throw bad(`unsupported dtype ${JSON.stringify(dtype)}`);
  const shapeText = ascii(payload.subarray(a + 1, b)).replace(/\s/g, "").replace(/,$/, "");
  if (!/^(\d+(,\d+)*)?$/.test(shapeText)) throw bad(`invalid shape ${JSON.stringify(shapeText)}`);
  const shape = shapeText === "" ? [] : shapeText.split(",").map(Number);
  const raw = payload.subarray(b + 1);
  const n = shape.reduce((p, d) => p * d, 1);
  if (n * reader.size !== raw.length) {
    throw bad(`shape [${shape}] of ${dtype} needs ${n * reader.size} bytes, got ${raw.length}`);
  }
  // Copy into a fresh, aligned buffer: the payload's offset may not be a multiple of 4. (Not
  // raw.slice(): on a Node Buffer that is a view, not a copy.)
  const arr = reader.read(new Uint8Array(raw).buffer, n);
  if (shape.length === 0) return arr[0];
  if (shape.length === 1) return arr;
  return new NdArray(arr, shape, dtypeOf(arr));
}

/** Build an ext-78 payload for a typed array (used by clients and tests). */
export function encodeExt78(arr: TypedArray | NdArray): Uint8Array {
  const nd = arr instanceof NdArray ? arr : new NdArray(arr, [arr.length]);
  const head = new TextEncoder().encode(`${nd.dtype}|${nd.shape.join(",")}|`);
  const out = new Uint8Array(head.length + nd.data.byteLength);
  out.set(head);
  out.set(bytesOf(nd.data), head.length);
  return out;
}

function ascii(b: Uint8Array): string {
  return String.fromCharCode(...b.subarray(0, 256));
}
