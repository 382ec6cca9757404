/**
 * POST /v1/extract with fixture/gliner (span NER). Expected entities come from direct
 * onnxruntime runs of the fixture, one window at a time, with inputs built here as GLiNER's ONNX exports take them
 * describes them and decoded here (sigmoid, threshold, greedy flat NER, word offsets).
 */
import assert from "node:assert/strict";
import { GLINER_TOKENS, MAX_WIDTH, MAX_WORDS } from "@svc/fixture-models/models";
import { type Json, postJson, type TestWorker, withWorker } from "./harness.ts";
import {
  type Ent,
  expectedEntities as expectedFor,
  type GlinerFixture,
  inCodePoints,
} from "./gliner_expected.ts";

const URL_PATH = "/v1/extract/fixture/gliner";
const LABELS = ["person", "location", "organization"];
const FIXTURE: GlinerFixture = {
  name: "gliner",
  layout: "span",
  tokens: GLINER_TOKENS,
  maxWidth: MAX_WIDTH,
  maxWords: MAX_WORDS,
};

const TEXTS = [
  "Alice lives in Paris and works for Google.",
  "Zoë  met   Bob at the café, naïve Straße!  (Washington-based) U.S.A.",
  "the stock market fell; investors sold shares in london, berlin and tokyo",
];

/** Entities of a text from direct runs of the fixture, decoded in the test helper (code points). */
async function expectedEntities(
  text: string,
  labels: string[],
  threshold = 0.5,
  lead?: string,
): Promise<Ent[]> {
  const ents = await expectedFor(FIXTURE, text, labels, { threshold, lead });
  return ents.map((e) => inCodePoints(text, e));
}

function assertSameEntities(got: Ent[], want: Ent[], what: string): void {
  assert.deepEqual(
    got.map((e) => [e.label, e.start, e.end, e.text]),
    want.map((e) => [e.label, e.start, e.end, e.text]),
    what,
  );
  got.forEach((e, i) => assert.ok(Math.abs(e.score - want[i].score) < 1e-4, `${what}: score`));
}

/** Offsets are code points: `text` is exactly that slice of the text's code points. */
function assertOffsets(text: string, ents: Ent[]): void {
  for (const e of ents) {
    assert.equal(Array.from(text).slice(e.start, e.end).join(""), e.text);
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
      // An item sent without an id is answered as `item-{i}`, as the SIE server does.
      assert.equal(item.id, i === 1 ? "item-1" : `t${i}`);
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
    // The SIE TypeScript client sends its threshold as params.threshold: the same option.
    assertSameEntities(
      (await extract(w, [TEXTS[1]], { labels: LABELS, threshold: 0 }))[0],
      want,
      "params.threshold 0",
    );
    assertSameEntities(
      (await extract(w, [TEXTS[1]], {
        labels: LABELS,
        threshold: 0.99,
        options: { threshold: 0 },
      }))[
        0
      ],
      want,
      "options.threshold wins",
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
      ["bad params.threshold", {
        items: [{ text: "a" }],
        params: { labels: LABELS, threshold: 2 },
      }],
      ["params.threshold not a number", {
        items: [{ text: "a" }],
        params: { labels: LABELS, threshold: "high" },
      }],
    ];
    for (const [what, body] of cases) {
      const r = await post(body);
      assert.equal(r.status, 400, what);
      assert.equal(r.body.detail.code, "INVALID_INPUT", what);
    }
    const high = await post({ items: [{ text: "a" }], params: { labels: LABELS, threshold: 2 } });
    assert.match(high.body.detail.message, /params\.threshold must be a number from 0 to 1/);
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

Deno.test("extract gliner: offsets are code points (accents, CJK, emoji, combining marks)", async () => {
  // Emoji before the entities (surrogate pairs shift UTF-16 offsets), CJK, precomposed and
  // decomposed accents.
  const texts = [
    "😀😀 Alice lives in Paris 🎉 and Bob in 東京 with Zoë.",
    "Cafe\u0301 owners 👩‍👩‍👧 met Jose\u0301 in Mu\u0308nchen and 北京.",
  ];
  await withWorker(async (w) => {
    const got = await extract(w, texts, { labels: LABELS, options: { threshold: 0 } });
    for (const [i, text] of texts.entries()) {
      assertOffsets(text, got[i]);
      assertSameEntities(got[i], await expectedEntities(text, LABELS, 0), `text ${i}`);
      const astral = Array.from(text).findIndex((ch) => ch.length === 2);
      assert.ok(
        got[i].some((e) => e.start > astral && e.start !== text.indexOf(e.text)),
        "some entity after an emoji, where code points and UTF-16 units differ",
      );
    }
  });
});

Deno.test("extract gliner: labels are data: special tokens, control characters, blanks are 400", async () => {
  await withWorker(async (w) => {
    const cases: [string, string[]][] = [
      ["the prompt token", ["<<ENT>>"]],
      ["inside a label", ["per<<SEP>>son"]],
      ["a BERT special token", ["[CLS] person"]],
      ["newline", ["person\nname"]],
      ["NUL", ["\u0000person"]],
      ["blank", ["   "]],
    ];
    for (const [what, labels] of cases) {
      const r = await postJson(`${w.url}${URL_PATH}`, {
        items: [{ text: "Alice" }],
        params: { labels },
      });
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.detail.code, "INVALID_INPUT", what);
    }
    const special = await postJson(`${w.url}${URL_PATH}`, {
      items: [{ text: "Alice" }],
      params: { labels: ["person", "<<ENT>>"] },
    });
    assert.match(special.body.detail.message, /<<ENT>>.*special token/);
    // The worker is still serving.
    assert.equal((await extract(w, ["Alice"], { labels: LABELS })).length, 1);
  });
});

Deno.test("extract gliner: an instruction is read as words before the text; spans stay in the text", async () => {
  const instruction = "Find the people and places mentioned in the following text:";
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${URL_PATH}`, {
      items: TEXTS.map((text) => ({ text })),
      params: { labels: LABELS, instruction, options: { threshold: 0.3 } },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    let differs = false;
    for (const [i, text] of TEXTS.entries()) {
      const got: Ent[] = r.body.items[i].entities;
      assertOffsets(text, got);
      assertSameEntities(got, await expectedEntities(text, LABELS, 0.3, instruction), `item ${i}`);
      const plain = await expectedEntities(text, LABELS, 0.3);
      differs ||= JSON.stringify(plain.map((e) =>
        e.score
      )) !== JSON.stringify(got.map((e) => e.score));
    }
    assert.ok(differs, "the instruction changes what the model reads");
    // Windowed text: the instruction precedes every window.
    const { text: long } = longText(150);
    const [windowed] = await extract(w, [long], { labels: LABELS, instruction });
    assertSameEntities(
      windowed,
      await expectedEntities(long, LABELS, 0.5, instruction),
      "windowed",
    );
    const tooLong = await postJson(`${w.url}${URL_PATH}`, {
      items: [{ text: "a" }],
      params: { labels: LABELS, instruction: "word ".repeat(40) },
    });
    assert.equal(tooLong.status, 400);
    assert.match(tooLong.body.detail.message, /instruction/);
  });
});
