/**
 * The load probe of a quantised graph (runs in the inference thread, once per load, never on the
 * request path): a fixed batch of short texts (or query/document pairs for a reranker) through
 * the quantised adapter and through the float one, compared the way a client would see the
 * difference. The quantised graph is kept only when it agrees; the other session is released.
 */
import type { Family, ModelConfig } from "@svc/shared/catalog/schema";
import type { QuantizationProbe } from "@svc/shared/schemas/models";
import type { ItemOutput, ModelAdapter, WorkItem, WorkParams } from "../families/types.ts";
import { type Int8Verdict, PROBED_FAMILIES } from "../catalog/int8.ts";
import { driveBatch, type DriveOptions } from "./driver.ts";

/** Embeddings must keep this mean cosine to the float graph's (the bench's int8 bar). */
export const MIN_MEAN_COSINE = 0.99;

/**
 * Reranker scores must keep this correlation (Pearson, over the probe pairs) with the float
 * graph's: the embeddings' bar, applied to the vector of scores once their mean is removed (the
 * correlation is that vector's cosine), because a shift common to every score reorders nothing.
 * It does not depend on the scale of the scores (raw logits or sigmoid). Errors of a tenth of
 * the scores' spread (1 − r ≈ e²/2) keep it; hidden states moved by a quarter of their length,
 * as saturating kernels move them (cosine 0.97), do not.
 */
export const MIN_SCORE_CORRELATION = 0.99;

/** Short texts of several kinds and lengths: what the probe encodes. */
export const PROBE_TEXTS = [
  "the cat sat on the mat",
  "How do I bake bread at home without a bread machine?",
  "Quarterly revenue rose 12 percent while operating costs fell.",
  "red apples and green pears in a bowl",
  "The committee will meet on Tuesday to discuss the new budget.",
  "a short one",
  "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
  "where is the nearest train station",
];

/** Queries, each against a relevant and two unrelated documents: a spread of scores. */
export const PROBE_PAIRS: { query: string; text: string }[] = [
  ["how do I bake bread", PROBE_TEXTS[1]],
  ["how do I bake bread", PROBE_TEXTS[2]],
  ["how do I bake bread", PROBE_TEXTS[7]],
  ["what makes plants grow", PROBE_TEXTS[6]],
  ["what makes plants grow", PROBE_TEXTS[0]],
  ["what makes plants grow", PROBE_TEXTS[4]],
  ["company earnings", PROBE_TEXTS[2]],
  ["company earnings", PROBE_TEXTS[3]],
  ["company earnings", PROBE_TEXTS[5]],
].map(([query, text]) => ({ query, text }));

/** The probe batch of a family: its items and parameters (undefined: the family has no probe). */
export function probeBatch(
  family: Family,
  config: ModelConfig,
): { items: WorkItem[]; params: WorkParams } | undefined {
  if (family === "reranker") return { items: PROBE_PAIRS, params: { op: "score" } };
  if (!PROBED_FAMILIES.has(family)) return undefined;
  const outputs = config.outputs.filter((o) =>
    o === "dense" || o === "sparse" || o === "multivector"
  );
  return {
    items: PROBE_TEXTS.map((text) => ({ text })),
    params: { op: "encode", outputs, inputType: "document" },
  };
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  // Two zero vectors agree; one zero vector does not.
  if (na === 0 || nb === 0) return na === nb ? 1 : 0;
  return dot / Math.sqrt(na * nb);
}

function sparseCosine(
  a: { indices: Int32Array; values: Float32Array },
  b: { indices: Int32Array; values: Float32Array },
): number {
  const bv = new Map<number, number>();
  b.indices.forEach((k, i) => bv.set(k, b.values[i]));
  let dot = 0, na = 0, nb = 0;
  a.indices.forEach((k, i) => {
    dot += a.values[i] * (bv.get(k) ?? 0);
    na += a.values[i] ** 2;
  });
  for (const v of b.values) nb += v * v;
  if (na === 0 || nb === 0) return na === nb ? 1 : 0;
  return dot / Math.sqrt(na * nb);
}

/** Mean cosine per token vector (token counts differ only if the graphs disagree badly). */
function multivectorCosine(
  a: { values: Float32Array; numTokens: number; tokenDims: number },
  b: { values: Float32Array; numTokens: number; tokenDims: number },
): number {
  if (a.numTokens !== b.numTokens || a.tokenDims !== b.tokenDims) return 0;
  let sum = 0;
  for (let t = 0; t < a.numTokens; t++) {
    const at = a.values.subarray(t * a.tokenDims, (t + 1) * a.tokenDims);
    const bt = b.values.subarray(t * b.tokenDims, (t + 1) * b.tokenDims);
    sum += cosine(at, bt);
  }
  return a.numTokens === 0 ? 1 : sum / a.numTokens;
}

/**
 * Compare the quantised graph's outputs (`q`) with the float graph's (`f`), item by item: the
 * mean cosine of every embedding, or the correlation of the scores.
 */
export function compareOutputs(q: ItemOutput[], f: ItemOutput[]): QuantizationProbe {
  if (q.length !== f.length) throw new Error(`${q.length} outputs against ${f.length}`);
  f.forEach((o, i) => {
    if (!o || o.error) {
      throw new Error(`float graph, probe item ${i}: ${o?.error?.message ?? "no output"}`);
    }
  });
  // The float graph answers where the quantised one fails (NaN, say): as far apart as can be.
  const failed = q.some((o) => !o || o.error);
  const inputs = q.length;
  if (f.every((o) => o.score !== undefined)) {
    const value = failed ? 0 : correlation(q.map((o) => o.score!), f.map((o) => o.score!));
    return { metric: "score_correlation", value, threshold: MIN_SCORE_CORRELATION, inputs };
  }
  if (failed) return { metric: "mean_cosine", value: 0, threshold: MIN_MEAN_COSINE, inputs };
  const cosines: number[] = [];
  q.forEach((a, i) => {
    const b = f[i];
    if (a.dense && b.dense) cosines.push(cosine(a.dense, b.dense));
    if (a.sparse && b.sparse) cosines.push(sparseCosine(a.sparse, b.sparse));
    if (a.multivector && b.multivector) {
      cosines.push(multivectorCosine(a.multivector, b.multivector));
    }
  });
  if (cosines.length === 0) throw new Error("the probe produced no embeddings to compare");
  const mean = cosines.reduce((s, c) => s + c, 0) / cosines.length;
  return { metric: "mean_cosine", value: mean, threshold: MIN_MEAN_COSINE, inputs };
}

/** True when the measure clears its bar. */
export function probeAccepts(p: QuantizationProbe): boolean {
  return p.value >= p.threshold;
}

/** Pearson correlation; scores all equal on both sides agree (1), on one side only do not (0). */
function correlation(a: number[], b: number[]): number {
  const mean = (x: number[]) => x.reduce((s, v) => s + v, 0) / x.length;
  const ma = mean(a), mb = mean(b);
  return cosine(a.map((v) => v - ma), b.map((v) => v - mb));
}

/**
 * Probe `quantized` against the float adapter `openFloat` builds; returns the adapter to serve
 * (the other one released) and the verdict. A probe that cannot run keeps the quantised adapter
 * and says why: the model still serves, marked as not checked.
 */
export async function probeQuantized(
  family: Family,
  config: ModelConfig,
  quantized: ModelAdapter,
  openFloat: () => Promise<ModelAdapter>,
  runTokenBudget: number,
  opts: DriveOptions = {},
): Promise<{ adapter: ModelAdapter; verdict: Int8Verdict }> {
  const t0 = performance.now();
  const batch = probeBatch(family, config);
  const ms = () => Math.round(performance.now() - t0);
  if (!batch) {
    return {
      adapter: quantized,
      verdict: { accepted: true, error: `no probe for ${family}`, ms: ms() },
    };
  }
  let float: ModelAdapter | undefined;
  try {
    float = await openFloat();
    const run = (a: ModelAdapter) =>
      driveBatch(a, batch.items, batch.params, runTokenBudget, undefined, opts);
    const q = await run(quantized);
    const f = await run(float);
    const probe = compareOutputs(q.outputs, f.outputs);
    const accepted = probeAccepts(probe);
    const [keep, drop] = accepted ? [quantized, float] : [float, quantized];
    await drop.dispose().catch(() => {});
    return { adapter: keep, verdict: { accepted, probe, ms: ms() } };
  } catch (err) {
    await float?.dispose().catch(() => {});
    const error = err instanceof Error ? err.message : String(err);
    return { adapter: quantized, verdict: { accepted: true, error, ms: ms() } };
  }
}
