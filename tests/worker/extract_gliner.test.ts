/**
 * POST /v1/extract with fixture/gliner (span NER). Expected entities come from direct
 * onnxruntime runs of the fixture, one window at a time, with inputs built here as models.md
 * describes them and decoded here (sigmoid, threshold, greedy flat NER, word offsets).
 */
import assert from "node:assert/strict";
import { ensureFixtures } from "../fixtures/mod.ts";
import { GLINER_TOKENS, MAX_WIDTH, MAX_WORDS } from "../fixtures/models/gliner.ts";
import { fixtureTokenizer, type OpenModel, openModel, runModel } from "../fixtures/testing.ts";
import type { Feeds } from "../fixtures/types.ts";
import { type Json, postJson, type TestWorker, withWorker } from "./harness.ts";

const URL_PATH = "/v1/extract/fixture/gliner";
const LABELS = ["person", "location", "organization"];
/** Words shared by consecutive windows: a span of up to MAX_WIDTH words fits in one of them. */
const OVERLAP = MAX_WIDTH - 1;

const TEXTS = [
  "Alice lives in Paris and works for Google.",
  "Zoë  met   Bob at the café, naïve Straße!  (Washington-based) U.S.A.",
  "the stock market fell; investors sold shares in london, berlin and tokyo",
];

interface Ent {
  text: string;
  label: string;
  score: number;
  start: number;
  end: number;
}

interface Span {
  start: number;
  end: number;
  label: number;
  score: number;
}

const tok = fixtureTokenizer(GLINER_TOKENS);
const WORD_RE = /[\p{L}\p{N}\p{M}_]+(?:[-_][\p{L}\p{N}\p{M}_]+)*|\S/gu;

/** Inputs of one window of words, alone in its batch. */
function windowFeeds(words: string[], labels: string[]): Feeds {
  const ids = [4]; // [CLS]
  const marks = [0];
  for (const p of [...labels.flatMap((l) => ["<<ENT>>", l]), "<<SEP>>"]) {
    for (const id of tok.encode(p, { add_special_tokens: false }).ids) {
      ids.push(id);
      marks.push(0);
    }
  }
  words.forEach((w, k) => {
    tok.encode(w, { add_special_tokens: false }).ids.forEach((id, i) => {
      ids.push(id);
      marks.push(i === 0 ? k + 1 : 0);
    });
  });
  ids.push(5); // [SEP]
  marks.push(0);
  const W = words.length;
  const spans = Array.from({ length: W * MAX_WIDTH }, (_, s) => {
    const i = Math.floor(s / MAX_WIDTH);
    return [i, i + (s % MAX_WIDTH)];
  });
  return {
    input_ids: { type: "int64", dims: [1, ids.length], data: ids },
    attention_mask: { type: "int64", dims: [1, ids.length], data: ids.map(() => 1) },
    words_mask: { type: "int64", dims: [1, ids.length], data: marks },
    text_lengths: { type: "int64", dims: [1, 1], data: [W] },
    span_idx: { type: "int64", dims: [1, W * MAX_WIDTH, 2], data: spans.flat() },
    span_mask: { type: "bool", dims: [1, W * MAX_WIDTH], data: spans.map(([, e]) => +(e < W)) },
  };
}

/** Window starts: MAX_WORDS words each, the next one starting OVERLAP words before the end. */
function windows(n: number): [number, number][] {
  const out: [number, number][] = [];
  for (let start = 0;; start = out[out.length - 1][1] - OVERLAP) {
    const end = Math.min(n, start + MAX_WORDS);
    out.push([start, end]);
    if (end === n) return out;
  }
}

let model: Promise<OpenModel> | undefined;

/** Entities of a text from direct runs of the fixture, decoded here. */
async function expectedEntities(text: string, labels: string[], threshold = 0.5): Promise<Ent[]> {
  model ??= ensureFixtures().then(async (fx) =>
    openModel(await Deno.readFile(`${fx}/cache/fixture/gliner/onnx/model.onnx`))
  );
  const m = await model;
  const words = [...text.matchAll(WORD_RE)];
  if (words.length === 0) return [];
  const found: Span[] = [];
  for (const [from, to] of windows(words.length)) {
    const feeds = windowFeeds(words.slice(from, to).map((w) => w[0]), labels);
    const { dims, data } = (await runModel(m, feeds)).logits;
    const [, W, K, C] = dims;
    for (let i = 0; i < W; i++) {
      for (let j = 0; j < K && i + j < W; j++) {
        for (let c = 0; c < C; c++) {
          const score = 1 / (1 + Math.exp(-data[(i * K + j) * C + c]));
          if (score >= threshold) {
            found.push({ start: from + i, end: from + i + j, label: c, score });
          }
        }
      }
    }
  }
  found.sort((a, b) => b.score - a.score);
  const kept: Span[] = [];
  for (const s of found) {
    if (kept.every((k) => s.end < k.start || s.start > k.end)) kept.push(s);
  }
  return kept.sort((a, b) => a.start - b.start).map((s) => {
    const start = words[s.start].index;
    const end = words[s.end].index + words[s.end][0].length;
    return { text: text.slice(start, end), label: labels[s.label], score: s.score, start, end };
  });
}

function assertSameEntities(got: Ent[], want: Ent[], what: string): void {
  assert.deepEqual(
    got.map((e) => [e.label, e.start, e.end, e.text]),
    want.map((e) => [e.label, e.start, e.end, e.text]),
    what,
  );
  got.forEach((e, i) => assert.ok(Math.abs(e.score - want[i].score) < 1e-4, `${what}: score`));
}

function assertOffsets(text: string, ents: Ent[]): void {
  for (const e of ents) {
    assert.equal(text.slice(e.start, e.end), e.text);
    assert.ok(e.start < e.end && e.score >= 0 && e.score <= 1);
  }
}

async function extract(w: TestWorker, texts: string[], params: Json): Promise<Ent[][]> {
  const r = await postJson(`${w.url}${URL_PATH}`, {
    items: texts.map((text) => ({ text })),
    params,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.items.map((it: Json) => it.entities);
}

/** A text of `n` vocabulary words with some punctuation, and each word's character offset. */
function longText(n: number): { text: string; wordStarts: number[] } {
  const pool = ["alice", "visited", "paris", "and", "the", "bank", "of", "london", "with", "bob"];
  let text = "";
  const wordStarts: number[] = [];
  for (let i = 0; i < n; i++) {
    if (i > 0) text += i % 7 === 0 ? "  " : " ";
    wordStarts.push(text.length);
    text += pool[(i * 3) % pool.length];
  }
  return { text, wordStarts };
}

Deno.test("extract gliner: entities match direct ONNX runs; offsets exact; ids echoed", async () => {
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${URL_PATH}`, {
      items: TEXTS.map((text, i) => i === 1 ? { text } : { id: `t${i}`, text }),
      params: { labels: LABELS },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.model, "fixture/gliner");
    assert.equal(typeof r.body.timing.inference_ms, "number");
    assert.match(r.headers.get("x-inference-time") ?? "", /^\d+\.\d\d$/);
    let total = 0;
    for (const [i, item] of (r.body.items as Json[]).entries()) {
      if (i === 1) assert.equal("id" in item, false, "missing id stays missing");
      else assert.equal(item.id, `t${i}`);
      assertOffsets(TEXTS[i], item.entities);
      assertSameEntities(item.entities, await expectedEntities(TEXTS[i], LABELS), `item ${i}`);
      total += item.entities.length;
    }
    assert.ok(total >= 3, `the texts produce a few entities (${total})`);
  });
});

Deno.test("extract gliner: threshold 0 finds a superset; labels required; bad params 400", async () => {
  await withWorker(async (w) => {
    const strict = (await extract(w, TEXTS, { labels: LABELS })).flat();
    const loose = (await extract(w, TEXTS, { labels: LABELS, options: { threshold: 0 } })).flat();
    assert.ok(loose.length > strict.length, `${loose.length} > ${strict.length}`);
    const key = (e: Ent) => `${e.start}:${e.end}:${e.label}`;
    const looseKeys = new Set(loose.map(key));
    assert.ok(strict.every((e) => looseKeys.has(key(e))), "default-threshold spans kept");
    const [want] = [await expectedEntities(TEXTS[1], LABELS, 0)];
    assertSameEntities(
      (await extract(w, [TEXTS[1]], { labels: LABELS, options: { threshold: 0 } }))[0],
      want,
      "threshold 0",
    );

    const post = (body: Json) => postJson(`${w.url}${URL_PATH}`, body);
    const cases: [string, Json][] = [
      ["no params", { items: [{ text: "a" }] }],
      ["no labels", { items: [{ text: "a" }], params: { options: {} } }],
      ["empty labels", { items: [{ text: "a" }], params: { labels: [] } }],
      ["blank label", { items: [{ text: "a" }], params: { labels: ["person", ""] } }],
      ["too many labels", {
        items: [{ text: "a" }],
        params: { labels: Array.from({ length: 65 }, (_, i) => `l${i}`) },
      }],
      ["long label", { items: [{ text: "a" }], params: { labels: ["x".repeat(101)] } }],
      ["bad threshold", {
        items: [{ text: "a" }],
        params: { labels: LABELS, options: { threshold: 2 } },
      }],
      ["item without text", { items: [{ id: "a" }], params: { labels: LABELS } }],
    ];
    for (const [what, body] of cases) {
      const r = await post(body);
      assert.equal(r.status, 400, what);
      assert.equal(r.body.detail.code, "INVALID_INPUT", what);
    }
    const noLabels = await post({ items: [{ text: "a" }] });
    assert.match(noLabels.body.detail.message, /labels/);
    // Within the limits, yet a prompt that leaves no room for text in 256 tokens.
    const wordy = Array.from({ length: 64 }, (_, i) => `the person number ${i}`);
    const full = await post({ items: [{ text: "a" }], params: { labels: wordy } });
    assert.equal(full.status, 400);
    assert.match(full.body.detail.message, /tokens/);
  });
});

Deno.test("extract gliner: texts longer than max_len words are windowed, offsets into the whole text", async () => {
  await withWorker(async (w) => {
    const { text, wordStarts } = longText(150);
    const [got] = await extract(w, [text], { labels: LABELS });
    assertOffsets(text, got);
    assertSameEntities(got, await expectedEntities(text, LABELS), "windowed text");
    const late = got.filter((e) => e.start >= wordStarts[MAX_WORDS]);
    assert.ok(late.length > 0, "entities beyond word 64");
    for (const e of got) assert.ok(wordStarts.includes(e.start), "entities start at a word");
  });
});

Deno.test("extract gliner: batching does not change results; label sets never mix", async () => {
  await withWorker(async (w) => {
    const { text: long } = longText(100);
    const mixed = [TEXTS[1], long, "hi", TEXTS[0], TEXTS[2], TEXTS[1]];
    const batched = await extract(w, mixed, { labels: LABELS });
    for (const [i, text] of mixed.entries()) {
      const [alone] = await extract(w, [text], { labels: LABELS });
      assertSameEntities(batched[i], alone, `item ${i} alone vs batched`);
    }
    // Concurrent requests with other labels: each answer matches its own labels.
    const other = ["city", "company"];
    const [a, b] = await Promise.all([
      extract(w, TEXTS, { labels: LABELS }),
      extract(w, TEXTS, { labels: other }),
    ]);
    for (const [i, text] of TEXTS.entries()) {
      assertSameEntities(a[i], await expectedEntities(text, LABELS), `labels A item ${i}`);
      assertSameEntities(b[i], await expectedEntities(text, other), `labels B item ${i}`);
    }
  });
});
