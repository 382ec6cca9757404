/**
 * Dynamic int8 quantisation of MatMul weights, the scheme onnxruntime's `quantize_dynamic` writes
 * with `reduce_range`: weights in 7 bits per output column (symmetric, zero point 0, |q| ≤ 64),
 * activations uint8 per tensor at run time (DynamicQuantizeLinear), the product in int32
 * (MatMulInteger), then back to float with `x_scale · w_scale[col]`. ORT fuses that chain into
 * one DynamicQuantizeMatMul kernel on CPU. Why 7 bits: see {@link WEIGHT_QMAX}.
 */
import type { NodeMsg } from "./encode.ts";

/** A weight `[K, N]` quantised per column: `w[k, n] ≈ q[k, n] · scale[n]`. */
export interface QuantizedWeight {
  q: Int8Array;
  scale: Float32Array;
}

/**
 * Largest weight magnitude written: ONNX Runtime's reduced range for symmetric int8, [-64, 64]
 * (scale = max|w| / 64). x86 CPUs without VNNI multiply u8 activations by s8 weights with
 * `vpmaddubsw`, which adds two products into a saturating int16: 255 · 127 · 2 = 64770 overflows
 * 32767 (row cosine 0.97 against float measured on AVX2), 255 · 64 · 2 = 32640 never does.
 */
export const WEIGHT_QMAX = 64;

/** Symmetric per-column 7-bit quantisation of a row-major `[rows, cols]` matrix. */
export function quantizePerColumn(w: Float32Array, rows: number, cols: number): QuantizedWeight {
  if (w.length !== rows * cols) throw new RangeError(`${w.length} values for [${rows}, ${cols}]`);
  const maxAbs = new Float32Array(cols);
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    for (let c = 0; c < cols; c++) {
      const a = Math.abs(w[o + c]);
      if (a > maxAbs[c]) maxAbs[c] = a;
    }
  }
  // An all-zero column gets scale 1 (its values quantise to 0 either way).
  const scale = maxAbs.map((m) => m > 0 ? m / WEIGHT_QMAX : 1);
  const q = new Int8Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    for (let c = 0; c < cols; c++) {
      q[o + c] = Math.max(-WEIGHT_QMAX, Math.min(WEIGHT_QMAX, Math.round(w[o + c] / scale[c])));
    }
  }
  return { q, scale };
}

/** Names of the tensors one quantised MatMul needs (initializers are added by the caller). */
export interface QuantizedMatMulNames {
  /** The float input `x` and the MatMul's output, kept so the rest of the graph is unchanged. */
  x: string;
  output: string;
  /** int8 `[K, N]`, int8 zero points `[N]` (all 0), float scales `[N]`. */
  weight: string;
  zeroPoint: string;
  scale: string;
  /** Prefix for the intermediate values and node names (unique per MatMul). */
  prefix: string;
}

/** The five nodes that replace `MatMul(x, W)` (same output name). */
export function quantizedMatMulNodes(n: QuantizedMatMulNames): NodeMsg[] {
  const v = (s: string) => `${n.prefix}/${s}`;
  const node = (opType: string, inputs: string[], outputs: string[], to?: number): NodeMsg => ({
    name: v(opType),
    opType,
    inputs,
    outputs,
    attributes: to === undefined ? [] : [{ name: "to", kind: "int", value: to }],
  });
  const FLOAT = 1;
  return [
    node("DynamicQuantizeLinear", [n.x], [v("x_q"), v("x_scale"), v("x_zero_point")]),
    node("MatMulInteger", [v("x_q"), n.weight, v("x_zero_point"), n.zeroPoint], [v("acc")]),
    node("Cast", [v("acc")], [v("acc_f")], FLOAT),
    // Mul(x_scale, w_scale) then Mul(acc, ·): the order ORT's MatMulIntegerToFloat fusion expects.
    { ...node("Mul", [v("x_scale"), n.scale], [v("scale")]), name: v("Mul_scale") },
    { ...node("Mul", [v("acc_f"), v("scale")], [n.output]), name: v("Mul_output") },
  ];
}
