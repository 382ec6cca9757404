/**
 * What ONNX Runtime's u8·s8 GEMM computes on an x86 CPU without VNNI, in plain TypeScript: AVX2's
 * `vpmaddubsw` multiplies unsigned 8-bit activations by signed 8-bit weights and adds each
 * adjacent pair of products into an int16 with saturation; `vpmaddwd` by ones then widens the
 * pairs to int32 sums without loss. VNNI's `vpdpbusd` adds the same products straight into int32.
 * So the two CPU kinds differ exactly where a pair sum leaves [-32768, 32767].
 */

const I16_MIN = -32768;
const I16_MAX = 32767;

/** One `vpmaddubsw` lane: `x0·w0 + x1·w1`, saturated to int16. */
export function maddubs(x0: number, w0: number, x1: number, w1: number): number {
  return Math.max(I16_MIN, Math.min(I16_MAX, x0 * w0 + x1 * w1));
}

/**
 * Dot product of u8 `x` and s8 column `col` of row-major `w` `[k, cols]` as the AVX2 kernel forms
 * it (pairs along k, each saturated to int16, summed in int32), and exactly (as VNNI does).
 */
export function dotU8S8(
  x: Uint8Array,
  w: Int8Array,
  cols: number,
  col: number,
): { avx2: number; exact: number; saturatedPairs: number } {
  let avx2 = 0, exact = 0, saturatedPairs = 0;
  for (let k = 0; k < x.length; k += 2) {
    const x0 = x[k], w0 = w[k * cols + col];
    // An odd k is padded with a zero pair member, as the kernel pads its packed panels.
    const x1 = k + 1 < x.length ? x[k + 1] : 0;
    const w1 = k + 1 < x.length ? w[(k + 1) * cols + col] : 0;
    const pair = maddubs(x0, w0, x1, w1);
    if (pair !== x0 * w0 + x1 * w1) saturatedPairs++;
    avx2 += pair;
    exact += x0 * w0 + x1 * w1;
  }
  return { avx2, exact, saturatedPairs };
}

/**
 * The u8 activations that push every pair of column `col` hardest toward saturation (pairs are
 * independent): 255 on both members when their weights share a sign, else 255 on the larger
 * weight alone. `worst` is the largest |pair sum| any u8 input can reach in that column.
 */
export function worstPairInput(
  w: Int8Array,
  k: number,
  cols: number,
  col: number,
): { worst: number; x: Uint8Array } {
  const x = new Uint8Array(k);
  let worst = 0;
  for (let i = 0; i < k; i += 2) {
    const w0 = w[i * cols + col], w1 = i + 1 < k ? w[(i + 1) * cols + col] : 0;
    if (Math.sign(w0) * Math.sign(w1) >= 0) {
      x[i] = 255;
      if (i + 1 < k) x[i + 1] = 255;
    } else if (Math.abs(w0) >= Math.abs(w1)) {
      x[i] = 255;
    } else {
      x[i + 1] = 255;
    }
    const pair = Math.abs(x[i] * w0 + (i + 1 < k ? x[i + 1] * w1 : 0));
    if (pair > worst) worst = pair;
  }
  return { worst, x };
}
