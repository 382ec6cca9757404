/** From span logits to entities: sigmoid, threshold, greedy flat NER, character offsets. */
import type { ItemOutput } from "../types.ts";
import type { GlinerRow } from "./rows.ts";
import type { Word } from "./words.ts";

/** A span above the threshold; `start`/`end` are word indices in the whole text (inclusive). */
export interface SpanCandidate {
  start: number;
  end: number;
  label: number;
  score: number;
}

/** An entity as the API returns it. */
export type SpanEntity = NonNullable<ItemOutput["entities"]>[number];

/**
 * Append the spans of batch row `b` (logits `[B, W, maxWidth, C]`) that score at least
 * `threshold` after a sigmoid, in whole-text word indices.
 */
export function collectSpans(
  logits: Float32Array,
  dims: readonly number[],
  b: number,
  row: GlinerRow,
  threshold: number,
  out: SpanCandidate[],
): void {
  const [, W, K, C] = dims;
  for (let i = 0; i < row.words; i++) {
    for (let j = 0; j < K && i + j < row.words; j++) {
      const base = ((b * W + i) * K + j) * C;
      for (let c = 0; c < C; c++) {
        const score = 1 / (1 + Math.exp(-logits[base + c]));
        if (score >= threshold) {
          out.push({ start: row.offset + i, end: row.offset + i + j, label: c, score });
        }
      }
    }
  }
}

/**
 * Flat NER: take spans by descending score, dropping any that shares a word with one already
 * taken (also the same span under another label, or from an overlapping window); sorted by start.
 */
export function greedyFlat(candidates: readonly SpanCandidate[], words: number): SpanCandidate[] {
  const order = [...candidates].sort((a, b) =>
    b.score - a.score || a.start - b.start || a.end - b.end || a.label - b.label
  );
  const taken = new Uint8Array(words);
  const kept: SpanCandidate[] = [];
  for (const s of order) {
    let free = true;
    for (let w = s.start; w <= s.end && free; w++) free = taken[w] === 0;
    if (!free) continue;
    taken.fill(1, s.start, s.end + 1);
    kept.push(s);
  }
  return kept.sort((a, b) => a.start - b.start);
}

/** Entities with character offsets: from the start word's start to the end word's end. */
export function toEntities(
  spans: readonly SpanCandidate[],
  words: readonly Word[],
  labels: readonly string[],
  text: string,
): SpanEntity[] {
  return spans.map((s) => {
    const start = words[s.start].start;
    const end = words[s.end].end;
    return { text: text.slice(start, end), label: labels[s.label], score: s.score, start, end };
  });
}
