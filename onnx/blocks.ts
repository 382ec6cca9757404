/**
 * Reusable subgraphs built from opset-17 operators: linear layers, GELU, layer norm, masked mean
 * pooling and L2 normalisation. Each takes value names and returns the name of its result; pass
 * `output` to give the result a fixed name (for graph outputs).
 */
import type { GraphBuilder } from "./builder.ts";
import { DataType } from "./schema.ts";

/** `x · w (+ b)` with `w` shaped `[in, out]` (MatMul broadcasts over leading axes). */
export function linear(g: GraphBuilder, x: string, w: string, b?: string, output?: string): string {
  if (!b) return g.op("MatMul", [x, w], {}, output);
  return g.op("Add", [g.op("MatMul", [x, w]), b], {}, output);
}

/** Exact GELU, `0.5 · x · (1 + erf(x / √2))` (the BERT activation; opset 17 has no Gelu op). */
export function gelu(g: GraphBuilder, x: string, output?: string): string {
  const scaled = g.op("Div", [x, g.constFloat([Math.SQRT2], [])]);
  const onePlus = g.op("Add", [g.op("Erf", [scaled]), g.constFloat([1], [])]);
  const half = g.op("Mul", [x, g.constFloat([0.5], [])]);
  return g.op("Mul", [half, onePlus], {}, output);
}

/** LayerNormalization over the last axis (an opset-17 operator). */
export function layerNorm(
  g: GraphBuilder,
  x: string,
  gamma: string,
  beta: string,
  epsilon: number,
  output?: string,
): string {
  return g.op(
    "LayerNormalization",
    [x, gamma, beta],
    { axis: -1, epsilon: { float: epsilon } },
    output,
  );
}

/**
 * Mean of `hidden [B, L, D]` over the positions where the int64 `mask [B, L]` is 1 → `[B, D]`.
 * The count is clamped to 1e-9 (as sentence-transformers does) so an all-padding row gives zeros.
 */
export function maskedMean(g: GraphBuilder, hidden: string, mask: string, output?: string): string {
  const m = g.op("Unsqueeze", [g.op("Cast", [mask], { to: DataType.FLOAT }), g.constInt64([-1])]);
  const axis1 = g.constInt64([1]);
  const sum = g.op("ReduceSum", [g.op("Mul", [hidden, m]), axis1], { keepdims: 0 });
  const count = g.op("ReduceSum", [m, axis1], { keepdims: 0 });
  const safe = g.op("Max", [count, g.constFloat([1e-9], [])]);
  return g.op("Div", [sum, safe], {}, output);
}

/** `x / max(‖x‖₂, eps)` along the last axis (torch.nn.functional.normalize). */
export function l2Normalize(g: GraphBuilder, x: string, eps = 1e-12, output?: string): string {
  const norm = g.op("ReduceL2", [x], { axes: [-1], keepdims: 1 });
  return g.op("Div", [x, g.op("Max", [norm, g.constFloat([eps], [])])], {}, output);
}
