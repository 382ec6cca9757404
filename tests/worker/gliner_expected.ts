/**
 * Expected GLiNER results computed independently of the worker: inputs built here as GLiNER's
 * ONNX exports take them (label prompt, word-wise sub-tokens, one window at a time, each window alone in
 * its batch), direct onnxruntime runs of the fixture, and decoding written out here.
 */
import { ensureFixtures } from "@svc/fixture-models";
import type { ExtraToken } from "@svc/fixture-models/tokenizer";
import { fixtureTokenizer, type OpenModel, openModel, runModel } from "../fixtures/testing.ts";
import type { Feeds } from "@svc/fixture-models";

/** An entity as the API returns it (offsets in the text's UTF-16 units unless converted). */
export interface Ent {
  text: string;
  label: string;
  score: number;
  start: number;
  end: number;
}

/** A span: whole-text word indices (inclusive), label index, score. */
export interface Span {
  start: number;
  end: number;
  label: number;
  score: number;
}

/** Which fixture, and the facts about it the decoding needs. */
export interface GlinerFixture {
  name: string;
  layout: "span" | "token";
  tokens: readonly ExtraToken[];
  maxWidth: number;
  maxWords: number;
}

const WORD_RE = /[\p{L}\p{N}\p{M}_]+(?:[-_][\p{L}\p{N}\p{M}_]+)*|\S/gu;

/** GLiNER's words of a text with their UTF-16 offsets. */
export function words(text: string): { text: string; start: number; end: number }[] {
  return [...text.matchAll(WORD_RE)].map((m) => ({
    text: m[0],
    start: m.index,
    end: m.index + m[0].length,
  }));
}

const models = new Map<string, Promise<OpenModel>>();

function model(name: string): Promise<OpenModel> {
  let m = models.get(name);
  if (!m) {
    m = ensureFixtures().then(async (fx) =>
      openModel(await Deno.readFile(`${fx}/cache/fixture/${name}/onnx/model.onnx`))
    );
    models.set(name, m);
  }
  return m;
}

/** Inputs of one row (lead words, then window words), alone in its batch. */
function rowFeeds(fx: GlinerFixture, rowWords: string[], labels: string[]): Feeds {
  const tok = fixtureTokenizer(fx.tokens);
  const ids = [4]; // [CLS]
  const marks = [0];
  for (const p of [...labels.flatMap((l) => ["<<ENT>>", l]), "<<SEP>>"]) {
    for (const id of tok.encode(p, { add_special_tokens: false }).ids) {
      ids.push(id);
      marks.push(0);
    }
  }
  rowWords.forEach((w, k) => {
    tok.encode(w, { add_special_tokens: false }).ids.forEach((id, i) => {
      ids.push(id);
      marks.push(i === 0 ? k + 1 : 0);
    });
  });
  ids.push(5); // [SEP]
  marks.push(0);
  const W = rowWords.length;
  const feeds: Feeds = {
    input_ids: { type: "int64", dims: [1, ids.length], data: ids },
    attention_mask: { type: "int64", dims: [1, ids.length], data: ids.map(() => 1) },
    words_mask: { type: "int64", dims: [1, ids.length], data: marks },
    text_lengths: { type: "int64", dims: [1, 1], data: [W] },
  };
  if (fx.layout === "span") {
    const spans = Array.from({ length: W * fx.maxWidth }, (_, s) => {
      const i = Math.floor(s / fx.maxWidth);
      return [i, i + (s % fx.maxWidth)];
    });
    feeds.span_idx = { type: "int64", dims: [1, W * fx.maxWidth, 2], data: spans.flat() };
    feeds.span_mask = {
      type: "bool",
      dims: [1, W * fx.maxWidth],
      data: spans.map(([, e]) => +(e < W)),
    };
  }
  return feeds;
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/**
 * Every span of a text scoring at least `threshold` for one of `labels`, over windows of
 * `maxWords - lead` text words that overlap by `maxWidth - 1`, each preceded by the lead words.
 */
export async function candidates(
  fx: GlinerFixture,
  text: string,
  labels: string[],
  opts: { threshold?: number; lead?: string } = {},
): Promise<Span[]> {
  const threshold = opts.threshold ?? 0.5;
  const lead = words(opts.lead ?? "").map((w) => w.text);
  const all = words(text).map((w) => w.text);
  const size = fx.maxWords - lead.length;
  const found: Span[] = [];
  for (let from = 0; from < all.length;) {
    const to = Math.min(all.length, from + size);
    const row = [...lead, ...all.slice(from, to)];
    const { dims, data } = (await runModel(await model(fx.name), rowFeeds(fx, row, labels))).logits;
    const P = lead.length;
    const add = (i: number, j: number, c: number, score: number) =>
      found.push({ start: from + i - P, end: from + j - P, label: c, score });
    if (fx.layout === "span") {
      const [, W, K, C] = dims;
      for (let i = P; i < W; i++) {
        for (let j = 0; j < K && i + j < W; j++) {
          for (let c = 0; c < C; c++) {
            const score = sigmoid(data[(i * K + j) * C + c]);
            if (score >= threshold) add(i, i + j, c, score);
          }
        }
      }
    } else {
      // [3, 1, W, C]: start, end, inside; all inside words above the threshold, mean inside score.
      const [, , W, C] = dims;
      const at = (plane: number, i: number, c: number) => sigmoid(data[(plane * W + i) * C + c]);
      for (let c = 0; c < C; c++) {
        for (let i = P; i < W; i++) {
          if (at(0, i, c) < threshold) continue;
          for (let j = i; j < W && j < i + fx.maxWidth; j++) {
            const inside = Array.from({ length: j - i + 1 }, (_, k) => at(2, i + k, c));
            if (inside.some((s) => s < threshold)) break;
            if (at(1, j, c) >= threshold) {
              add(i, j, c, inside.reduce((a, b) => a + b, 0) / inside.length);
            }
          }
        }
      }
    }
    if (to === all.length) break;
    from = to - (fx.maxWidth - 1);
  }
  return found;
}

/** Greedy selection without shared words, by descending score; sorted by start. */
export function flat(found: Span[]): Span[] {
  const kept: Span[] = [];
  for (const s of [...found].sort((a, b) => b.score - a.score)) {
    if (kept.every((k) => s.end < k.start || s.start > k.end)) kept.push(s);
  }
  return kept.sort((a, b) => a.start - b.start);
}

/** Spans as entities with UTF-16 offsets. */
export function toEnts(text: string, spans: Span[], labels: string[]): Ent[] {
  const ws = words(text);
  return spans.map((s) => {
    const start = ws[s.start].start;
    const end = ws[s.end].end;
    return { text: text.slice(start, end), label: labels[s.label], score: s.score, start, end };
  });
}

/** Expected entities of a text (flat NER over all labels). */
export async function expectedEntities(
  fx: GlinerFixture,
  text: string,
  labels: string[],
  opts: { threshold?: number; lead?: string } = {},
): Promise<Ent[]> {
  return toEnts(text, flat(await candidates(fx, text, labels, opts)), labels);
}

/** UTF-16 offsets of an entity re-expressed in code points, computed the slow, obvious way. */
export function inCodePoints(text: string, e: Ent): Ent {
  const cp = (i: number) => Array.from(text.slice(0, i)).length;
  return { ...e, start: cp(e.start), end: cp(e.end) };
}
