/**
 * Relation extraction with a GLiNER multitask model, as its authors run it: entities are found
 * first; then, for every head entity and relation type, the label `"{head} <> {relation}"` is put
 * in the prompt (the text preceded by a relation instruction) and the spans the model finds for
 * it are that relation's tails.
 */
import type { ItemOutput } from "../types.ts";
import type { SpanCandidate, SpanEntity } from "./decode.ts";

/**
 * Most distinct head entities per item (the best-scoring are kept): the second pass prompts
 * heads × relation types labels, so this bounds its cost.
 */
export const MAX_RELATION_HEADS = 16;

/** The instruction GLiNER's relation pipeline puts before the text. */
export const DEFAULT_RELATION_PROMPT = "Extract relationships between entities from the text:";

/** A relation as the API returns it. */
export type Relation = NonNullable<ItemOutput["relations"]>[number];

/**
 * Head texts of an item: distinct entity texts (the best-scoring `max` of them), in order of
 * first appearance; `usable` drops texts that cannot be a label (e.g. a special token).
 */
export function relationHeads(
  entities: readonly SpanEntity[],
  usable: (text: string) => boolean,
  max = MAX_RELATION_HEADS,
): string[] {
  const best = new Map<string, { score: number; first: number }>();
  entities.forEach((e, i) => {
    if (!usable(e.text)) return;
    const seen = best.get(e.text);
    if (!seen) best.set(e.text, { score: e.score, first: i });
    else seen.score = Math.max(seen.score, e.score);
  });
  return [...best.entries()]
    .sort((a, b) => b[1].score - a[1].score || a[1].first - b[1].first)
    .slice(0, max)
    .sort((a, b) => a[1].first - b[1].first)
    .map(([text]) => text);
}

/** The second-pass labels: for each relation type, each head (relation-major). */
export function relationLabels(heads: readonly string[], relations: readonly string[]): string[] {
  return relations.flatMap((r) => heads.map((h) => `${h} <> ${r}`));
}

/**
 * Relations from the second pass's selected spans (label index `r * heads + h`): a span that is
 * the head itself is no relation; a (head, relation, tail) found twice keeps its best score.
 * Sorted by score, highest first.
 */
export function assembleRelations(
  spans: readonly SpanCandidate[],
  spanText: (s: SpanCandidate) => string,
  heads: readonly string[],
  relations: readonly string[],
): Relation[] {
  const found = new Map<string, Relation>();
  for (const s of spans) {
    const head = heads[s.label % heads.length];
    const relation = relations[Math.floor(s.label / heads.length)];
    const tail = spanText(s);
    if (tail === head) continue;
    const key = JSON.stringify([head, relation, tail]);
    const seen = found.get(key);
    if (!seen || s.score > seen.score) found.set(key, { head, tail, relation, score: s.score });
  }
  return [...found.values()].sort((a, b) => b.score - a.score);
}
