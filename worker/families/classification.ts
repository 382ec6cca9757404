/**
 * Turning per-label scores into the API's classifications, shared by the zero-shot families
 * (NLI cross-encoders and GLiClass): which NLI classes mean entailment and contradiction, the
 * single-label and multi-label probabilities, ranking and threshold.
 */
import type { ItemOutput } from "./types.ts";

/** A class label with its probability. */
export type Classification = NonNullable<ItemOutput["classifications"]>[number];

/** Positions of the entailment and contradiction logits of an NLI head. */
export interface NliHeads {
  entailment: number;
  contradiction: number;
}

/**
 * Find the entailment and contradiction classes in an NLI model's labels (`id2label` order):
 * 3-way heads name `entailment`, `neutral`, `contradiction` in any order; 2-way heads name
 * `entailment` and `not_entailment` (the other class then plays contradiction).
 */
export function nliHeads(labels: readonly string[]): NliHeads {
  const norm = labels.map((l) => l.toLowerCase().replace(/[\s_-]+/g, "_"));
  const entailment = norm.findIndex((l) => l.startsWith("entail"));
  if (entailment < 0) throw new Error(`NLI labels [${labels}] name no entailment class`);
  let contradiction = norm.findIndex((l) => l.startsWith("contradict"));
  if (contradiction < 0) contradiction = norm.findIndex((l) => /^not_?entail/.test(l));
  if (contradiction < 0 && labels.length === 2) contradiction = 1 - entailment;
  if (contradiction < 0) throw new Error(`NLI labels [${labels}] name no contradiction class`);
  return { entailment, contradiction };
}

/** Softmax of a list of logits (max-shifted). */
export function softmax(logits: readonly number[]): number[] {
  const top = Math.max(...logits);
  const exps = logits.map((x) => Math.exp(x - top));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / sum);
}

/** The logistic function. */
export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

/**
 * Classifications from one probability per label: highest first (ties keep the labels' order),
 * without those below `threshold` when one is given.
 */
export function rankLabels(
  labels: readonly string[],
  scores: readonly number[],
  threshold?: number,
): Classification[] {
  return labels
    .map((label, i) => ({ label, score: scores[i] }))
    .filter((c) => threshold === undefined || c.score >= threshold)
    .sort((a, b) => b.score - a.score);
}
