/** float16 / int8 / binary helpers and the output_dtype builders, against hand-computed values. */
import assert from "node:assert/strict";
import {
  float16BitsToNumber,
  float16ToFloat32,
  float16ToFloat32Js,
  float32ToFloat16,
  float32ToFloat16Bits,
  float32ToFloat16Js,
  packBits,
  packBitsRows,
  quantizeInt8,
  quantizeInt8Rows,
  unpackBits,
} from "@svc/shared/codec/float16";
import { makeDenseVector, makeMultiVector, makeSparseVector } from "@svc/shared/codec/output_dtype";

Deno.test("float16: hand-computed conversions (normals, rounding, subnormals, inf, nan)", () => {
  const cases: [number, number][] = [
    [0, 0x0000],
    [-0, 0x8000],
    [1, 0x3c00],
    [-2, 0xc000],
    [0.5, 0x3800],
    [65504, 0x7bff], // largest finite half
    [65519, 0x7bff], // just below the halfway point to 65536: rounds down
    [65520, 0x7c00], // halfway, mantissa odd → rounds to even = overflow to infinity
    [1e6, 0x7c00],
    [Infinity, 0x7c00],
    [-Infinity, 0xfc00],
    [0.1, 0x2e66], // 0.1 ≈ 1.6 × 2^-4: mant 0x266.66 → 0x266
    [1 + 2 ** -11, 0x3c00], // tie between 0x3c00 and 0x3c01: to even
    [1 + 3 * 2 ** -11, 0x3c02], // tie between 0x3c01 and 0x3c02: to even
    [2 ** -14, 0x0400], // smallest normal
    [2 ** -24, 0x0001], // smallest subnormal
    [2 ** -25, 0x0000], // exactly half the smallest subnormal: tie to even (0)
    [3 * 2 ** -26, 0x0001], // 0.75 of the smallest subnormal: rounds up
    [1023 * 2 ** -24, 0x03ff], // largest subnormal
    [2 ** -14 - 2 ** -25, 0x0400], // halfway between the largest subnormal and 2^-14: to even
    [1e-10, 0x0000],
    [-1e-10, 0x8000],
    [1e-45, 0x0000], // a float32 subnormal
  ];
  for (const [x, bits] of cases) {
    assert.equal(float32ToFloat16Bits(x), bits, `f16(${x})`);
    assert.equal(float32ToFloat16(new Float32Array([x]))[0], bits, `native f16(${x})`);
  }
  const nan = float32ToFloat16Bits(NaN);
  assert.equal(nan & 0x7c00, 0x7c00);
  assert.notEqual(nan & 0x03ff, 0, "NaN keeps a non-zero mantissa");
  assert.ok(Number.isNaN(float16BitsToNumber(nan)));
});

Deno.test("float16: portable conversion equals the native Float16Array on 200k random floats", () => {
  // Deterministic xorshift32 bit patterns: every exponent, sign and mantissa, NaNs included.
  const bits = new Uint32Array(200_000);
  let x = 0x9e3779b9;
  for (let i = 0; i < bits.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bits[i] = x >>> 0;
  }
  const src = new Float32Array(bits.buffer);
  const js = float32ToFloat16Js(src);
  const native = float32ToFloat16(src);
  for (let i = 0; i < src.length; i++) {
    if (Number.isNaN(src[i])) {
      assert.ok(Number.isNaN(float16BitsToNumber(js[i])));
      continue;
    }
    if (js[i] !== native[i]) assert.fail(`${src[i]}: js ${js[i]} native ${native[i]}`);
  }
  // Values in the half range exercise rounding much more than raw random bit patterns.
  const small = Float32Array.from(
    { length: 200_000 },
    (_, i) => Math.sin(i) * 2 ** ((i % 40) - 25),
  );
  assert.deepEqual(float32ToFloat16Js(small), float32ToFloat16(small));
});

Deno.test("float16: every half value survives half → float32 → half exactly", () => {
  const all = new Uint16Array(65536).map((_, i) => i);
  const back = float32ToFloat16Js(float16ToFloat32(all));
  for (let h = 0; h < 65536; h++) {
    const isNan = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
    if (!isNan && back[h] !== h) {
      assert.fail(`0x${h.toString(16)} came back as 0x${back[h].toString(16)}`);
    }
  }
  // The native half → float32 conversion gives the portable table's values for every half.
  const native = float16ToFloat32(all);
  const js = float16ToFloat32Js(all);
  for (let h = 0; h < 65536; h++) {
    if (!Object.is(native[h], js[h]) && !(Number.isNaN(native[h]) && Number.isNaN(js[h]))) {
      assert.fail(`0x${h.toString(16)}: native ${native[h]} js ${js[h]}`);
    }
  }
  // A view into a larger buffer converts only its own elements.
  const view = new Uint16Array([0x3c00, 0x4000, 0xc000]).subarray(1, 2);
  assert.deepEqual(float16ToFloat32(view), Float32Array.of(2));
  assert.equal(float16BitsToNumber(0x3555), 0.333251953125);
  assert.equal(float16BitsToNumber(0x0001), 2 ** -24);
});

Deno.test("int8: round(x / max|x| * 127), half to even, zeros stay zeros", () => {
  assert.deepEqual(
    quantizeInt8(new Float32Array([0.5, -1, 0.25, 0])),
    Int8Array.of(64, -127, 32, 0),
  );
  // -63.5 → -64 (numpy rounds half to even; Math.round would give -63).
  assert.deepEqual(quantizeInt8(new Float32Array([-0.5, 1])), Int8Array.of(-64, 127));
  assert.deepEqual(quantizeInt8(new Float32Array([2, -4, 1])), Int8Array.of(64, -127, 32));
  assert.deepEqual(quantizeInt8(new Float32Array(5)), new Int8Array(5));
  assert.deepEqual(quantizeInt8(new Float32Array([NaN, 1])), Int8Array.of(0, 127));
  assert.deepEqual(quantizeInt8(new Float32Array(0)), new Int8Array(0));
});

Deno.test("int8 rows: each row scaled by its own max", () => {
  const m = new Float32Array([1, 0.5, 0, 0, -2, 1]);
  assert.deepEqual(quantizeInt8Rows(m, 3, 2), Int8Array.of(127, 64, 0, 0, -127, 64));
});

Deno.test("binary: x > 0 packed MSB-first like numpy packbits, last byte zero-padded", () => {
  assert.deepEqual(packBits([0.3, -1, 2, 0, 0.5, -3, 4, 1, -1, 2]), Uint8Array.of(0xab, 0x40));
  assert.deepEqual(packBits([1, 1, 1, 1, 1, 1, 1, 1]), Uint8Array.of(0xff));
  assert.deepEqual(packBits([0, -1, NaN]), Uint8Array.of(0));
  assert.deepEqual(packBits([]), new Uint8Array(0));
  assert.deepEqual(packBits([1]), Uint8Array.of(0x80));
  assert.deepEqual(
    unpackBits(Uint8Array.of(0xab, 0x40), 10),
    Uint8Array.of(1, 0, 1, 0, 1, 0, 1, 1, 0, 1),
  );
  // Rows are packed separately: 2 rows of 9 dims → 2 bytes each.
  const rows = new Float32Array([1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(packBitsRows(rows, 2, 9), Uint8Array.of(0x80, 0x80, 0x40, 0x00));
});

Deno.test("output_dtype builders: dims stay the float dimension", () => {
  const v = new Float32Array([0.5, -1, 0.25, 0, 1, 1, 1, 1, 1]);
  assert.deepEqual(makeDenseVector(v), { dims: 9, dtype: "float32", values: v });
  const f16 = makeDenseVector(v, "float16");
  assert.equal(f16.dtype, "float16");
  assert.ok(f16.values instanceof Uint16Array && f16.values[0] === 0x3800);
  const i8 = makeDenseVector(v, "int8");
  assert.ok(i8.values instanceof Int8Array && i8.values[1] === -127);
  const bin = makeDenseVector(v, "binary");
  assert.deepEqual(bin, { dims: 9, dtype: "binary", values: Uint8Array.of(0xaf, 0x80) });

  const idx = Int32Array.of(3, 9);
  const vals = new Float32Array([0.5, 2]);
  assert.equal(makeSparseVector(100, idx, vals, "int8").dtype, "float32");
  assert.equal(makeSparseVector(100, idx, vals, "binary").values, vals);
  const sf16 = makeSparseVector(100, idx, vals, "float16");
  assert.deepEqual(sf16.values, Uint16Array.of(0x3800, 0x4000));

  const m = new Float32Array([1, -1, 0.5, 0, 0, 2]); // 2 tokens × 3 dims
  const mv = makeMultiVector(m, 2, 3, "int8");
  assert.deepEqual(mv.values.shape, [2, 3]);
  assert.deepEqual(mv.values.data, Int8Array.of(127, -127, 64, 0, 0, 127));
  const mb = makeMultiVector(m, 2, 3, "binary");
  assert.equal(mb.token_dims, 3);
  assert.deepEqual(mb.values.shape, [2, 1]);
  assert.deepEqual(mb.values.data, Uint8Array.of(0xa0, 0x20));
  assert.deepEqual(makeMultiVector(m, 2, 3, "float16").values.dtype, "<f2");
});
