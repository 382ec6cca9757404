/**
 * The best `k` candidate spans of each label of one item, across all its windows. With a low
 * threshold every (start, width, label) of every window is a candidate: words × max_width ×
 * labels objects for a long text (a 100,000-character text with 1,024 relation labels grew a
 * worker past 4 GB). Keeping a bounded min-heap per label (typed arrays, no object per candidate)
 * makes memory labels × k whatever the threshold; greedy selection then runs over those.
 */
import type { SpanCandidate } from "./decode.ts";

/** Where scored spans go (a span is kept or dropped there). */
export interface SpanSink {
  add(start: number, end: number, label: number, score: number): void;
}

/** One label's heap: scores with their spans, the lowest score at the root. */
interface Heap {
  size: number;
  score: Float64Array;
  start: Int32Array;
  end: Int32Array;
}

/** First allocation of a label's heap; it doubles up to `k`. */
const INITIAL_CAPACITY = 16;

/** Up to `k` best spans per label (ties: the span seen first stays). */
export class TopSpans implements SpanSink {
  readonly #heaps: (Heap | undefined)[] = [];

  constructor(readonly k: number) {
    if (!(k >= 1)) throw new RangeError(`spans per label must be at least 1, got ${k}`);
  }

  add(start: number, end: number, label: number, score: number): void {
    let h = this.#heaps[label];
    if (!h) this.#heaps[label] = h = newHeap(Math.min(this.k, INITIAL_CAPACITY));
    if (h.size < this.k) {
      if (h.size === h.score.length) this.#heaps[label] = h = grown(h, this.k);
      let i = h.size++;
      // Sift up.
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (h.score[parent] <= score) break;
        move(h, parent, i);
        i = parent;
      }
      put(h, i, start, end, score);
      return;
    }
    if (score <= h.score[0]) return;
    // Replace the root and sift down.
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.size) break;
      const r = l + 1;
      const c = r < h.size && h.score[r] < h.score[l] ? r : l;
      if (h.score[c] >= score) break;
      move(h, c, i);
      i = c;
    }
    put(h, i, start, end, score);
  }

  /** Spans kept so far, label by label (in heap order: sort before use). */
  spans(): SpanCandidate[] {
    const out: SpanCandidate[] = [];
    this.#heaps.forEach((h, label) => {
      if (!h) return;
      for (let i = 0; i < h.size; i++) {
        out.push({ start: h.start[i], end: h.end[i], label, score: h.score[i] });
      }
    });
    return out;
  }
}

function newHeap(capacity: number): Heap {
  return {
    size: 0,
    score: new Float64Array(capacity),
    start: new Int32Array(capacity),
    end: new Int32Array(capacity),
  };
}

function grown(h: Heap, k: number): Heap {
  const g = newHeap(Math.min(k, h.score.length * 2));
  g.size = h.size;
  g.score.set(h.score);
  g.start.set(h.start);
  g.end.set(h.end);
  return g;
}

function move(h: Heap, from: number, to: number): void {
  h.score[to] = h.score[from];
  h.start[to] = h.start[from];
  h.end[to] = h.end[from];
}

function put(h: Heap, i: number, start: number, end: number, score: number): void {
  h.score[i] = score;
  h.start[i] = start;
  h.end[i] = end;
}
