/**
 * POST /v1/extract with fixture/ner (BIO token classification). Expected entities come from a
 * direct onnxruntime run of the fixture on the whole-text tokenisation, decoded here (softmax,
 * argmax, BIO merge) with offsets from a separate character aligner.
 */
import assert from "node:assert/strict";
import { ensureFixtures, NER_LABELS } from "@svc/fixture-models";
import { fixtureTokenizer, openModel, runModel, textFeeds } from "../fixtures/testing.ts";
import {
  type Json,
  postJson,
  type TestWorker,
  withFakeBackendWorker,
  withWorker,
} from "./harness.ts";
import { decodeMsgpackView } from "./msgpack_view.ts";

const URL_PATH = "/v1/extract/fixture/ner";
/** Body tokens the fixture reads: max_sequence_length 128 minus [CLS] and [SEP]. */
const BODY_TOKENS = 126;

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

/**
 * Code-point span of each token: lower-case, accent-free text matched token by token; an [UNK]
 * covers one BERT word (a run of letters and digits, or one other character).
 */
function alignTokens(text: string, tokens: string[]): [number, number][] {
  const norm = [...text].map((ch) => ch.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase());
  assert.ok(norm.every((n) => [...n].length === 1), "test texts: one code point per character");
  let pos = 0;
  return tokens.map((t) => {
    while (/\s/.test(norm[pos])) pos++;
    const start = pos;
    if (t === "[UNK]") {
      if (/[\p{L}\p{N}]/u.test(norm[pos])) { while (/[\p{L}\p{N}]/u.test(norm[pos] ?? "")) pos++; }
      else pos++;
    } else {
      const surface = t.replace(/^##/, "");
      assert.equal(norm.slice(pos, pos + surface.length).join(""), surface, `token ${t} at ${pos}`);
      pos += surface.length;
    }
    return [start, pos];
  });
}

/** A code-point slice of a text. */
function slice(text: string, start: number, end: number): string {
  return Array.from(text).slice(start, end).join("");
}

/** Entities of each text from a direct run of the fixture (each text alone, no padding). */
async function expectedEntities(texts: string[]): Promise<Ent[][]> {
  const fx = await ensureFixtures();
  const m = await openModel(await Deno.readFile(`${fx}/cache/fixture/ner/onnx/model.onnx`));
  const tok = fixtureTokenizer();
  const out: Ent[][] = [];
  for (const text of texts) {
    const enc = tok.encode(text);
    const logits = (await runModel(m, textFeeds(tok, [text], true))).logits;
    const C = NER_LABELS.length;
    const body = enc.tokens.slice(1, -1);
    const spans = alignTokens(text, body);
    const ents: Ent[] = [];
    let cur: Ent & { n: number } | undefined;
    body.forEach((_, i) => {
      const row = Array.from(logits.data.subarray((i + 1) * C, (i + 2) * C));
      const best = row.indexOf(Math.max(...row));
      const z = row.reduce((s, v) => s + Math.exp(v - row[best]), 0);
      const label = NER_LABELS[best];
      const type = label.slice(2);
      if (label === "O" || label.startsWith("B-") || cur?.label !== type) {
        if (cur) ents.push(cur);
        cur = label === "O"
          ? undefined
          : { text: "", label: type, score: 1 / z, start: spans[i][0], end: spans[i][1], n: 1 };
        return;
      }
      cur.score += 1 / z;
      cur.n++;
      cur.end = spans[i][1];
    });
    if (cur) ents.push(cur);
    out.push(ents.map((e) => {
      const { n, ...rest } = e as Ent & { n: number };
      return { ...rest, score: rest.score / n, text: slice(text, rest.start, rest.end) };
    }));
  }
  await m.session.release();
  return out;
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
    assert.equal(slice(text, e.start, e.end), e.text);
    assert.ok(e.start < e.end && e.score > 0 && e.score <= 1);
    assert.equal(e.text.trim(), e.text, "entities never start or end with whitespace");
  }
}

async function extract(w: TestWorker, texts: string[], params?: Json): Promise<Ent[][]> {
  const r = await postJson(`${w.url}${URL_PATH}`, {
    items: texts.map((text) => ({ text })),
    params,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.items.map((it: Json) => it.entities);
}

Deno.test("extract ner: entities match a direct ONNX run; offsets exact; ids echoed; timing", async () => {
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${URL_PATH}`, {
      items: TEXTS.map((text, i) => i === 1 ? { text } : { id: `t${i}`, text }),
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.model, "fixture/ner");
    const want = await expectedEntities(TEXTS);
    assert.equal(r.body.items.length, TEXTS.length, "one result per item");
    r.body.items.forEach((item: Json, i: number) => {
      // An item sent without an id is answered as `item-{i}`, as the SIE server does.
      assert.equal(item.id, i === 1 ? "item-1" : `t${i}`);
      assertOffsets(TEXTS[i], item.entities);
      assertSameEntities(item.entities, want[i], `item ${i}`);
    });
    assert.ok(want.flat().length >= 3, "the texts produce a few entities");
    const served = r.body.items.reduce((n: number, it: Json) => n + it.entities.length, 0);
    assert.equal(served, want.flat().length, "the worker found every expected entity");
    assert.equal(typeof r.body.timing.inference_ms, "number");
    assert.match(r.headers.get("x-inference-time") ?? "", /^\d+\.\d\d$/);

    // Default answer is msgpack with the same content.
    const res = await fetch(`${w.url}${URL_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ items: [{ id: "a", text: TEXTS[0] }] }),
    });
    assert.equal(res.headers.get("content-type"), "application/msgpack");
    const packed = decodeMsgpackView(new Uint8Array(await res.arrayBuffer()));
    assert.equal(packed.items[0].id, "a");
    assertSameEntities(packed.items[0].entities, want[0], "msgpack");
  });
});

Deno.test("extract ner: labels filter case-insensitively; threshold drops weaker entities", async () => {
  await withWorker(async (w) => {
    const all = (await extract(w, TEXTS)).flat();
    const types = [...new Set(all.map((e) => e.label))];
    assert.ok(types.length >= 2, `several entity types (${types})`);
    const only = types[0];
    const filtered = (await extract(w, TEXTS, { labels: [only.toLowerCase(), "NOPE"] })).flat();
    assert.deepEqual(filtered, all.filter((e) => e.label === only));
    assert.deepEqual((await extract(w, TEXTS, { labels: ["nope"] })).flat(), []);

    const scores = all.map((e) => e.score).sort((a, b) => a - b);
    const threshold = scores[Math.floor(scores.length / 2)];
    const strong = (await extract(w, TEXTS, { options: { threshold } })).flat();
    assert.deepEqual(strong, all.filter((e) => e.score >= threshold));
    assert.ok(strong.length < all.length && strong.length > 0);
    assert.deepEqual((await extract(w, TEXTS, { options: { threshold: 0 } })).flat(), all);
  });
});

Deno.test("extract ner: truncation at max_sequence_length; batching does not change results", async () => {
  await withWorker(async (w) => {
    const words = Array.from({ length: 300 }, (_, i) => ["paris", "alice", "bank", "rain"][i % 4]);
    const long = words.join(" ");
    const seen = words.slice(0, BODY_TOKENS).join(" ");
    const [got] = await extract(w, [long]);
    const [want] = await expectedEntities([seen]);
    const cut = await postJson(`${w.url}${URL_PATH}`, { items: [{ text: long }, { text: seen }] });
    assert.equal(cut.headers.get("x-truncated-items"), "1", "the long text, not its head");
    assertOffsets(long, got);
    assertSameEntities(got, want, "long text = its first 126 tokens");
    assert.ok(got.every((e) => e.end <= seen.length));

    const mixed = [TEXTS[1], long, TEXTS[0], "hi", TEXTS[2], TEXTS[1]];
    const batched = await extract(w, mixed);
    for (const [i, text] of mixed.entries()) {
      const [alone] = await extract(w, [text]);
      assertSameEntities(batched[i], alone, `item ${i} alone vs batched`);
    }
  });
});

Deno.test("extract ner: bad inputs are 400; unknown model 404; wrong op 400", async () => {
  // Request validation happens before any model runs: the fake backend serves.
  await withFakeBackendWorker(async (w) => {
    const post = (path: string, body: Json) => postJson(`${w.url}${path}`, body);
    const png = btoa("not really a png");
    const cases: [string, Json][] = [
      ["item without text", { items: [{ id: "x", images: [{ data: png, format: "png" }] }] }],
      ["threshold not a number", {
        items: [{ text: "a" }],
        params: { options: { threshold: "hi" } },
      }],
      ["threshold above 1", { items: [{ text: "a" }], params: { options: { threshold: 1.5 } } }],
      ["threshold below 0", { items: [{ text: "a" }], params: { options: { threshold: -0.1 } } }],
      ["empty items", { items: [] }],
      ["empty label", { items: [{ text: "a" }], params: { labels: ["PER", " "] } }],
      ["control character in a label", { items: [{ text: "a" }], params: { labels: ["P\tER"] } }],
      ["instruction (no prompt to put it in)", {
        items: [{ text: "a" }],
        params: { instruction: "find people" },
      }],
    ];
    for (const [what, body] of cases) {
      const r = await post(URL_PATH, body);
      assert.equal(r.status, 400, what);
      assert.equal(r.body.detail.code, "INVALID_INPUT", what);
    }
    const unknown = await post("/v1/extract/fixture/nope", { items: [{ text: "a" }] });
    assert.equal(unknown.status, 404);
    const wrongOp = await post("/v1/extract/fixture/dense", { items: [{ text: "a" }] });
    assert.equal(wrongOp.status, 400);
    assert.match(wrongOp.body.detail.message, /\/v1\/encode/);
    const encodeNer = await post("/v1/encode/fixture/ner", { items: [{ text: "a" }] });
    assert.equal(encodeNer.status, 400);
    assert.match(encodeNer.body.detail.message, /\/v1\/extract/);
    const ok = await post(URL_PATH, { items: [{ text: "" }, { text: "   " }] });
    assert.equal(ok.status, 200);
    const empty = { entities: [], relations: [], classifications: [], objects: [] };
    assert.deepEqual(ok.body.items, [{ id: "item-0", ...empty }, { id: "item-1", ...empty }]);
  });
});

Deno.test("extract ner: offsets are code points after emoji and accents", async () => {
  const texts = [
    "😀 Alice met Bob in Paris 🎉 and Zoë went to Berlin.",
    "naïve 🎉 café owners in london 😀 and paris",
  ];
  await withWorker(async (w) => {
    const got = await extract(w, texts, { options: { threshold: 0 } });
    const want = await expectedEntities(texts);
    for (const [i, text] of texts.entries()) {
      assertOffsets(text, got[i]);
      assertSameEntities(got[i], want[i], `text ${i}`);
      assert.ok(
        got[i].some((e) => e.start !== text.indexOf(e.text)),
        "an entity where code points and UTF-16 units differ",
      );
    }
    const r = await postJson(`${w.url}${URL_PATH}`, {
      items: [{ text: "a" }],
      params: { instruction: "find people" },
    });
    assert.match(r.body.detail.message, /instruction/);
  });
});
