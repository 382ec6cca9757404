/**
 * From GLiNER logits to spans: sigmoid, threshold, greedy selection, character offsets.
 * Span-level exports score every (start, width) span; token-level exports (the multitask models)
 * score each word as a span's start, end and inside, and a span is a start and an end of the same
 * label with every word between them inside.
 */
import type { ItemOutput } from "../types.ts";
import type { GlinerRow } from "./rows.ts";
import type { Word } from "./words.ts";
import type { SpanSink } from "./top_spans.ts";

/** A span above the threshold; `start`/`end` are word indices in the whole text (inclusive). */
export interface SpanCandidate {
  start: number;
  end: number;
  /** Index into the item's label list. */
  label: number;
  score: number;
}

/** An entity as the API returns it (offsets in JavaScript string indices here). */
export type SpanEntity = NonNullable<ItemOutput["entities"]>[number];

/** The two logits layouts GLiNER exports produce. */
export type GlinerLayout = "span" | "token";

function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

/**
 * Send the spans of batch row `b` that score at least `threshold`, in whole-text word indices, to
 * `out` (a list, or a sink that keeps only the best of each label).
 * Span layout: logits `[B, W, maxWidth, C]`. Token layout: `[3, B, W, C]` (start, end, inside);
 * a span's score is the mean of its inside scores, and spans are at most `maxWidth` words so
 * that windows overlapping by `maxWidth - 1` words see every span whole.
 */
export function collectSpans(
  layout: GlinerLayout,
  logits: Float32Array,
  dims: readonly number[],
  b: number,
  row: GlinerRow,
  maxWidth: number,
  threshold: number,
  out: SpanCandidate[] | SpanSink,
): void {
  const sink: SpanSink = Array.isArray(out)
    ? { add: (start, end, label, score) => out.push({ start, end, label, score }) }
    : out;
  const push = (i: number, j: number, c: number, score: number) =>
    sink.add(row.offset + i - row.lead, row.offset + j - row.lead, row.labelOffset + c, score);
  if (layout === "span") {
    const [, W, K, C] = dims;
    for (let i = row.lead; i < row.words; i++) {
      for (let j = 0; j < K && i + j < row.words; j++) {
        const base = ((b * W + i) * K + j) * C;
        for (let c = 0; c < row.labels; c++) {
          const score = sigmoid(logits[base + c]);
          if (score >= threshold) push(i, i + j, c, score);
        }
      }
    }
    return;
  }
  const [, B, W, C] = dims;
  const at = (plane: number, i: number, c: number) =>
    sigmoid(logits[((plane * B + b) * W + i) * C + c]);
  for (let c = 0; c < row.labels; c++) {
    for (let i = row.lead; i < row.words; i++) {
      if (at(0, i, c) < threshold) continue;
      let inside = 0;
      for (let j = i; j < row.words && j < i + maxWidth; j++) {
        const s = at(2, j, c);
        if (s < threshold) break; // every longer span holds this word too
        inside += s;
        if (at(1, j, c) >= threshold) push(i, j, c, inside / (j - i + 1));
      }
    }
  }
}

function byScore(a: SpanCandidate, b: SpanCandidate): number {
  return b.score - a.score || a.start - b.start || a.end - b.end || a.label - b.label;
}

/**
 * Flat NER: take spans by descending score, dropping any that shares a word with one already
 * taken (also the same span under another label, or from an overlapping window); sorted by start.
 */
export function greedyFlat(candidates: readonly SpanCandidate[], words: number): SpanCandidate[] {
  const taken = new Uint8Array(words);
  const kept: SpanCandidate[] = [];
  for (const s of [...candidates].sort(byScore)) {
    let free = true;
    for (let w = s.start; w <= s.end && free; w++) free = taken[w] === 0;
    if (!free) continue;
    taken.fill(1, s.start, s.end + 1);
    kept.push(s);
  }
  return kept.sort((a, b) => a.start - b.start);
}

/**
 * Greedy flat selection within each label separately (labels do not compete for words): the
 * spans of every label, each list by descending score.
 */
export function greedyPerLabel(
  candidates: readonly SpanCandidate[],
  words: number,
  labels: number,
): SpanCandidate[][] {
  const byLabel: SpanCandidate[][] = Array.from({ length: labels }, () => []);
  for (const s of candidates) byLabel[s.label]?.push(s);
  return byLabel.map((list) => greedyFlat(list, words).sort(byScore));
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
