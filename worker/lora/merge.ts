/**
 * Merging LoRA updates into base weights. PEFT's forward pass adds `scale · x·Aᵀ·Bᵀ` to a Linear
 * layer's output, so the merged PyTorch weight (`[out, in]`) is `W + scale · B·A`, and a graph
 * weight stored `[in, out]` (a MatMul operand) gets the transpose, `W + scale · Aᵀ·Bᵀ`.
 */
import {
  indexOnnxModel,
  type OnnxIndex,
  readFloatInitializer,
  replaceFloatInitializers,
} from "@svc/onnx";
import { LoraMismatchError, type LoraPlan, type WeightPatch } from "./plan.ts";
import { allFinite } from "../families/finite.ts";

/**
 * `w` plus `scale · B·A` in `w`'s layout, in place. `a` is `[rank, in]`, `b` is `[out, rank]`,
 * `w` is `[in, out]` (`in_out`) or `[out, in]` (`out_in`), all row-major.
 */
export function addLoraUpdate(
  w: Float32Array,
  layout: "in_out" | "out_in",
  a: Float32Array,
  b: Float32Array,
  dims: { inFeatures: number; outFeatures: number; rank: number },
  scale: number,
): void {
  const { inFeatures: n, outFeatures: m, rank: r } = dims;
  if (a.length !== r * n || b.length !== m * r || w.length !== n * m) {
    throw new RangeError(
      `LoRA update sizes do not fit: A ${a.length}, B ${b.length}, W ${w.length}`,
    );
  }
  if (layout === "out_in") {
    // W[o, i] += Σk scale·B[o, k]·A[k, i]: rows of A are contiguous.
    for (let o = 0; o < m; o++) {
      const row = o * n;
      for (let k = 0; k < r; k++) {
        const s = scale * b[o * r + k];
        if (s === 0) continue;
        const ak = k * n;
        for (let i = 0; i < n; i++) w[row + i] += s * a[ak + i];
      }
    }
    return;
  }
  // W[i, o] += Σk scale·A[k, i]·B[o, k]: Bᵀ once, so the inner loop runs over contiguous rows.
  const bt = new Float32Array(r * m);
  for (let o = 0; o < m; o++) for (let k = 0; k < r; k++) bt[k * m + o] = b[o * r + k];
  for (let i = 0; i < n; i++) {
    const row = i * m;
    for (let k = 0; k < r; k++) {
      const s = scale * a[k * n + i];
      if (s === 0) continue;
      const bk = k * m;
      for (let o = 0; o < m; o++) w[row + o] += s * bt[bk + o];
    }
  }
}

/** How a patch's A and B values are obtained (from the adapter's safetensors file). */
export type LoraTensorSource = (name: string) => Float32Array;

/** Result of {@link mergeLoraIntoModel}. */
export interface MergedModel {
  /** The patched model file, in memory. */
  bytes: Uint8Array;
  /** Graph weights rewritten. */
  patched: number;
}

/**
 * A copy of the model in `modelBytes` with every patch of `plan` merged into its weights. Throws
 * `LoraMismatchError` when a merged weight is not finite (NaN or infinite A/B values, or a scale
 * that overflows float32): such a graph answers every request with NaN.
 */
export function mergeLoraIntoModel(
  modelBytes: Uint8Array,
  plan: LoraPlan,
  tensor: LoraTensorSource,
  index: OnnxIndex = indexOnnxModel(modelBytes),
): MergedModel {
  const values = new Map<string, Float32Array>();
  for (const p of plan.patches) {
    values.set(p.initializer, mergedWeight(index, p, tensor, plan.scale));
  }
  return { bytes: replaceFloatInitializers(index, values), patched: values.size };
}

function mergedWeight(
  index: OnnxIndex,
  p: WeightPatch,
  tensor: LoraTensorSource,
  scale: number,
): Float32Array {
  const init = index.initializers.get(p.initializer);
  if (!init) throw new Error(`graph weight ${p.initializer} disappeared from the model`);
  const w = readFloatInitializer(index, init);
  addLoraUpdate(w, p.layout, tensor(p.a), tensor(p.b), p, scale);
  if (!allFinite(w)) {
    throw new LoraMismatchError(
      `module ${p.module}: merged into graph weight ${p.initializer} it gives non-finite values ` +
        `(NaN or infinity): its lora_A/lora_B hold such values, or the scale (lora_alpha / r = ` +
        `${scale}) overflows float32`,
    );
  }
  return w;
}
