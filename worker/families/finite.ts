/**
 * Non-finite numbers (NaN, ±Infinity) never leave a model as an answer: JSON would turn them into
 * `null` and a client would get a 200 of nulls. The inference thread checks what each run
 * produced; extract families also check their raw logits, whose NaNs a threshold would otherwise
 * drop silently (an empty answer instead of an error).
 */
import type { ItemOutput } from "./types.ts";

/** A model output holds NaN or an infinity; `output` names it. */
export class NonFiniteOutputError extends Error {
  constructor(readonly output: string) {
    super(`the model produced non-finite values (NaN or infinity) in its ${output}`);
    this.name = "NonFiniteOutputError";
  }
}

/** True when every value is finite. One pass, no allocation: NaN or ±Infinity times 0 is NaN. */
export function allFinite(values: ArrayLike<number>): boolean {
  let acc = 0;
  for (let i = 0; i < values.length; i++) acc += values[i] * 0;
  return acc === 0;
}

/** Throw NonFiniteOutputError naming `output` unless every value is finite. */
export function assertFinite(values: ArrayLike<number>, output: string): void {
  if (!allFinite(values)) throw new NonFiniteOutputError(output);
}

function scoresFinite(list: readonly { score: number }[] | undefined): boolean {
  if (!list) return true;
  let acc = 0;
  for (let i = 0; i < list.length; i++) acc += list[i].score * 0;
  return acc === 0;
}

/** The name of the first output of `o` holding a non-finite number, or undefined. */
export function nonFiniteOutput(o: ItemOutput): string | undefined {
  if (o.dense && !allFinite(o.dense)) return "dense vector";
  if (o.sparse && !allFinite(o.sparse.values)) return "sparse vector";
  if (o.multivector && !allFinite(o.multivector.values)) return "multi-vector";
  if (o.score !== undefined && !Number.isFinite(o.score)) return "score";
  if (!scoresFinite(o.entities)) return "entity scores";
  if (!scoresFinite(o.classifications)) return "classification scores";
  if (!scoresFinite(o.relations)) return "relation scores";
  if (o.objects) {
    if (!scoresFinite(o.objects)) return "object scores";
    for (const obj of o.objects) if (!allFinite(obj.bbox)) return "object boxes";
  }
  if (o.fieldSpans) { for (const spans of o.fieldSpans) if (!scoresFinite(spans)) return "spans"; }
  return undefined;
}
