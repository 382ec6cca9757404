/**
 * Reading numpy-style wire arrays the way a Python client's `np.frombuffer` would: by the dtype
 * string, little-endian, C order. Written from the wire rules only (float16 decoded from its bits
 * here, not with the service's helpers).
 */
import type { WireArray } from "./msgpack.ts";

/** Bytes per element of each dtype the wire may carry. */
const ITEM_SIZE: Record<string, number> = { "<f4": 4, "<f2": 2, "|i1": 1, "|u1": 1, "<i4": 4 };

/** IEEE half-precision bits → number. */
export function halfToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** The elements of a wire array as numbers, after checking its byte length against the shape. */
export function elements(a: WireArray): number[] {
  const size = ITEM_SIZE[a.dtype];
  if (size === undefined) throw new Error(`dtype ${a.dtype} is not one the wire uses`);
  const count = a.shape.reduce((x, y) => x * y, 1);
  if (a.data.length !== count * size) {
    throw new Error(
      `${a.dtype} shape [${a.shape}] needs ${count * size} bytes, got ${a.data.length}`,
    );
  }
  const v = new DataView(a.data.buffer, a.data.byteOffset, a.data.byteLength);
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const at = i * size;
    switch (a.dtype) {
      case "<f4":
        out.push(v.getFloat32(at, true));
        break;
      case "<f2":
        out.push(halfToNumber(v.getUint16(at, true)));
        break;
      case "|i1":
        out.push(v.getInt8(at));
        break;
      case "|u1":
        out.push(v.getUint8(at));
        break;
      case "<i4":
        out.push(v.getInt32(at, true));
        break;
    }
  }
  return out;
}

/** A 2-D wire array as rows. */
export function rows(a: WireArray): number[][] {
  if (a.shape.length !== 2) throw new Error(`expected a 2-D array, shape [${a.shape}]`);
  const flat = elements(a);
  const [n, m] = a.shape;
  return Array.from({ length: n }, (_, i) => flat.slice(i * m, (i + 1) * m));
}

/** Unpack `n` bits stored MSB-first (numpy `unpackbits`, then the first n). */
export function unpackBits(bytes: number[], n: number): number[] {
  return Array.from({ length: n }, (_, i) => (bytes[i >> 3] >> (7 - (i & 7))) & 1);
}
