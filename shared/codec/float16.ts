// Own code: a fallback for runtimes without Float16Array (Node 22); no package rounds like numpy.
/**
 * Output precision helpers (docs/api.md, `output_dtype`): float16 conversion, symmetric int8 and
 * min-max uint8 quantisation, and binary packing. Pure functions over typed arrays; the worker calls them per
 * vector (or per token row for multi-vectors).
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Convert one number to IEEE float16 bits (via float32, round-to-nearest-even; inf/nan kept). */
export function float32ToFloat16Bits(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  const mant = bits & 0x7fffff;
  if (exp === 0xff) {
    // Infinity keeps a zero mantissa; NaN must keep a non-zero one (set the quiet bit).
    return mant === 0 ? sign | 0x7c00 : sign | 0x7e00 | (mant >>> 13);
  }
  const e = exp - 127; // unbiased exponent
  if (e > 15) return sign | 0x7c00; // too large for half: overflow to infinity
  if (e >= -14) {
    // Normal half: drop 13 mantissa bits with round-to-nearest-even. A carry out of the mantissa
    // correctly bumps the exponent (up to infinity at the top).
    let h = sign | ((e + 15) << 10) | (mant >>> 13);
    const rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest === 0x1000 && (h & 1) === 1)) h++;
    return h;
  }
  // Subnormal half: value = m × 2^-24. The full 24-bit significand shifted right by s.
  const s = -e - 1; // ≥ 14
  if (s > 24 || exp === 0) return sign; // below half of the smallest subnormal: signed zero
  const sig = mant | 0x800000;
  let m = sig >>> s;
  const rest = sig & ((1 << s) - 1);
  const half = 1 << (s - 1);
  if (rest > half || (rest === half && (m & 1) === 1)) m++; // may carry into the smallest normal
  return sign | m;
}

/** Convert float16 bits back to a number (exact). */
export function float16BitsToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** The native Float16Array (Deno 2.x, Node 24+); the two constructor forms used here. */
interface Float16Ctor {
  new (src: ArrayLike<number>): { buffer: ArrayBuffer; length: number };
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): ArrayLike<number>;
}
const NativeFloat16: Float16Ctor | undefined =
  (globalThis as unknown as { Float16Array?: Float16Ctor }).Float16Array;

/** float32 → float16 bits for a whole vector (native conversion when available; same result). */
export function float32ToFloat16(src: Float32Array): Uint16Array {
  if (NativeFloat16) return new Uint16Array(new NativeFloat16(src).buffer);
  return float32ToFloat16Js(src);
}

/** Portable float32 → float16 conversion, also used to cross-check the native one in tests. */
export function float32ToFloat16Js(src: Float32Array): Uint16Array {
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = float32ToFloat16Bits(src[i]);
  return out;
}

/** float16 bits → float32 for a whole vector (native conversion when available; same result). */
export function float16ToFloat32(src: Uint16Array): Float32Array {
  if (NativeFloat16) {
    return new Float32Array(new NativeFloat16(src.buffer, src.byteOffset, src.length));
  }
  return float16ToFloat32Js(src);
}

let halfTable: Float32Array | undefined;

/** Portable float16 → float32 (65536-entry table built on first use), cross-checked in tests. */
export function float16ToFloat32Js(src: Uint16Array): Float32Array {
  if (!halfTable) {
    halfTable = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) halfTable[h] = float16BitsToNumber(h);
  }
  const t = halfTable;
  const out = new Float32Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = t[src[i]];
  return out;
}

/**
 * Round half to even, like numpy's `round` (JavaScript's `Math.round` rounds halves up), so int8
 * and uint8 output match the reference engine byte for byte.
 */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Symmetric int8 quantisation of one vector: `round(x / max|x| * 127)`, computed in float32 like
 * numpy does. An all-zero (or non-finite-max) vector stays zeros; NaN elements become 0.
 */
export function quantizeInt8(src: Float32Array): Int8Array {
  const out = new Int8Array(src.length);
  let max = 0;
  for (let i = 0; i < src.length; i++) {
    const a = Math.abs(src[i]);
    if (a > max) max = a;
  }
  if (max === 0 || !Number.isFinite(max)) return out;
  for (let i = 0; i < src.length; i++) {
    const q = roundHalfEven(Math.fround(Math.fround(src[i] / max) * 127));
    out[i] = q !== q ? 0 : q; // NaN guard
  }
  return out;
}

/** int8 quantisation of each row of a `rows` × `cols` matrix, each row scaled on its own. */
export function quantizeInt8Rows(src: Float32Array, rows: number, cols: number): Int8Array {
  const out = new Int8Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    out.set(quantizeInt8(src.subarray(r * cols, (r + 1) * cols)), r * cols);
  }
  return out;
}

/** What a constant vector (max = min) quantises to under uint8: the middle of the range. */
export const UINT8_CONSTANT = 128;

/**
 * Min-max uint8 quantisation of one vector: `round((x - min) / (max - min) * 255)`, every step in
 * float32 like numpy. A constant vector (or one with a non-finite range) is all 128; NaN
 * elements become 0.
 */
export function quantizeUint8(src: Float32Array): Uint8Array {
  const out = new Uint8Array(src.length);
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < src.length; i++) {
    const x = src[i];
    if (x < min) min = x;
    if (x > max) max = x;
  }
  const range = Math.fround(max - min);
  if (!(range > 0) || !Number.isFinite(range)) return out.fill(UINT8_CONSTANT);
  for (let i = 0; i < src.length; i++) {
    const scaled = Math.fround(Math.fround(Math.fround(src[i] - min) / range) * 255);
    const q = roundHalfEven(scaled);
    out[i] = q !== q ? 0 : q; // NaN guard; x - min ≤ range, so q never exceeds 255
  }
  return out;
}

/** uint8 quantisation of each row of a `rows` × `cols` matrix, each row scaled on its own. */
export function quantizeUint8Rows(src: Float32Array, rows: number, cols: number): Uint8Array {
  const out = new Uint8Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    out.set(quantizeUint8(src.subarray(r * cols, (r + 1) * cols)), r * cols);
  }
  return out;
}

/** Pack the bits `x > 0` MSB-first into bytes (numpy `packbits`); the last byte is zero-padded. */
export function packBits(src: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(Math.ceil(src.length / 8));
  for (let i = 0; i < src.length; i++) {
    if (src[i] > 0) out[i >>> 3] |= 0x80 >>> (i & 7);
  }
  return out;
}

/** Pack each row of a `rows` × `cols` matrix separately: `rows` × ceil(cols/8) bytes. */
export function packBitsRows(src: Float32Array, rows: number, cols: number): Uint8Array {
  const stride = Math.ceil(cols / 8);
  const out = new Uint8Array(rows * stride);
  for (let r = 0; r < rows; r++) {
    out.set(packBits(src.subarray(r * cols, (r + 1) * cols)), r * stride);
  }
  return out;
}

/** Unpack `n` bits (MSB-first) into 0/1 values: the inverse of {@link packBits}. */
export function unpackBits(src: Uint8Array, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (src[i >>> 3] >>> (7 - (i & 7))) & 1;
  return out;
}
