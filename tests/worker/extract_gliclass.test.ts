/**
 * POST /v1/extract with fixture/gliclass (GLiClass uni-encoder). Expected scores come from direct
 * onnxruntime runs of inputs composed here as the GLiClass pipelines compose them (text, then
 * `<<LABEL>>` before each label, `<<SEP>>`, the instruction; tokenised whole), with the
 * probabilities written out here.
 */
import assert from "node:assert/strict";
import { ensureFixtures } from "@svc/fixture-models";
import { GLICLASS_MAX_TOKENS, GLICLASS_TOKENS, LABEL_ID } from "@svc/fixture-models/models";
import { fixtureTokenizer, type OpenModel, openModel, runModel } from "../fixtures/testing.ts";
import { assertExtractKeys, type Json, postJson, type TestWorker, withWorker } from "./harness.ts";
import { decodeMsgpackView } from "./msgpack_view.ts";

const URL_PATH = "/v1/extract/fixture/gliclass";
const LABELS = ["sports", "politics", "cooking", "weather", "finance", "travel"];
const TEXTS = [
  "Alice scored twice and the team won the cup.",
  "Bake bread in a hot oven for an hour.",
  "the stock market fell; investors sold shares in london",
];

interface Cls {
  label: string;
  score: number;
}

const tok = fixtureTokenizer(GLICLASS_TOKENS);
let model: Promise<OpenModel> | undefined;

/** Logits of one text, composed and truncated (the text is cut, never the labels), run alone. */
async function logits(text: string, labels: string[], instruction = ""): Promise<number[]> {
  model ??= ensureFixtures().then(async (fx) =>
    openModel(await Deno.readFile(`${fx}/cache/fixture/gliclass/onnx/model.onnx`))
  );
  const composed = text + labels.map((l) => `<<LABEL>>${l}`).join("") + "<<SEP>>" + instruction;
  const body = tok.encode(composed, { add_special_tokens: false }).ids;
  const room = GLICLASS_MAX_TOKENS - 2;
  const tail = body.slice(body.indexOf(LABEL_ID));
  const kept = body.length <= room ? body : [...body.slice(0, room - tail.length), ...tail];
  const ids = [4, ...kept, 5];
  const { data } = (await runModel(await model, {
    input_ids: { type: "int64", dims: [1, ids.length], data: ids },
    attention_mask: { type: "int64", dims: [1, ids.length], data: ids.map(() => 1) },
  })).logits;
  return Array.from(data);
}

/** Multi-label: 1 / (1 + e^-x) per label, kept at the threshold; single: e^x_k / Σ e^x_j. */
async function expected(
  text: string,
  labels: string[],
  opts: { multi?: boolean; threshold?: number; instruction?: string } = {},
): Promise<Cls[]> {
  const x = await logits(text, labels, opts.instruction);
  const multi = opts.multi ?? true;
  const total = x.reduce((s, v) => s + Math.exp(v), 0);
  const scores = x.map((v) => multi ? 1 / (1 + Math.exp(-v)) : Math.exp(v) / total);
  const threshold = opts.threshold ?? (multi ? 0.5 : undefined);
  return labels.map((label, k) => ({ label, score: scores[k] }))
    .filter((c) => threshold === undefined || c.score >= threshold)
    .sort((a, b) => b.score - a.score);
}

function assertSame(got: Cls[], want: Cls[], what: string): void {
  assert.deepEqual(got.map((c) => c.label), want.map((c) => c.label), what);
  got.forEach((c, i) => assert.ok(Math.abs(c.score - want[i].score) < 1e-5, `${what}: ${c.label}`));
}

async function classify(w: TestWorker, texts: string[], params: Json): Promise<Cls[][]> {
  const r = await postJson(`${w.url}${URL_PATH}`, {
    items: texts.map((text) => ({ text })),
    params,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  for (const item of r.body.items) assertExtractKeys(item, ["classifications"]);
  return r.body.items.map((it: Json) => it.classifications);
}

Deno.test("extract gliclass: multi-label sigmoid at 0.5 by default, matching direct runs (JSON and msgpack)", async () => {
  await withWorker(async (w) => {
    const got = await classify(w, TEXTS, { labels: LABELS });
    let kept = 0;
    for (const [i, text] of TEXTS.entries()) {
      assertSame(got[i], await expected(text, LABELS), `item ${i}`);
      kept += got[i].length;
    }
    assert.ok(kept > 0 && kept < TEXTS.length * LABELS.length, `threshold keeps some (${kept})`);
    const res = await fetch(`${w.url}${URL_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ items: [{ id: "x", text: TEXTS[0] }], params: { labels: LABELS } }),
    });
    assert.equal(res.headers.get("content-type"), "application/msgpack");
    const packed = decodeMsgpackView(new Uint8Array(await res.arrayBuffer()));
    assert.equal(packed.items[0].id, "x");
    assertSame(packed.items[0].classifications, await expected(TEXTS[0], LABELS), "msgpack");
  });
});

Deno.test("extract gliclass: single-label softmax, threshold, instruction after the labels", async () => {
  await withWorker(async (w) => {
    const [single] = await classify(w, [TEXTS[1]], {
      labels: LABELS,
      options: { multi_label: false },
    });
    assertSame(single, await expected(TEXTS[1], LABELS, { multi: false }), "single-label");
    assert.equal(single.length, LABELS.length);
    assert.ok(Math.abs(single.reduce((s, c) => s + c.score, 0) - 1) < 1e-6, "sums to 1");

    const [all] = await classify(w, [TEXTS[2]], { labels: LABELS, options: { threshold: 0 } });
    assertSame(all, await expected(TEXTS[2], LABELS, { threshold: 0 }), "threshold 0");
    assert.equal(all.length, LABELS.length);

    const instruction = "Which topics does this text cover?";
    const [told] = await classify(w, [TEXTS[0]], {
      labels: LABELS,
      instruction,
      options: { threshold: 0 },
    });
    assertSame(
      told,
      await expected(TEXTS[0], LABELS, { threshold: 0, instruction }),
      "instruction",
    );
    assert.notDeepEqual(
      told.map((c) => c.score),
      (await expected(TEXTS[0], LABELS, { threshold: 0 })).map((c) => c.score),
    );
  });
});

Deno.test("extract gliclass: a long text is cut, never the labels; batching does not change results", async () => {
  const long = Array.from({ length: 200 }, (_, i) => ["paris", "bread", "market", "rain"][i % 4])
    .join(" ");
  await withWorker(async (w) => {
    const [got] = await classify(w, [long], { labels: LABELS, options: { threshold: 0 } });
    assertSame(got, await expected(long, LABELS, { threshold: 0 }), "long text");
    const mixed = [TEXTS[1], long, "hi", TEXTS[0], TEXTS[2]];
    const batched = await classify(w, mixed, { labels: LABELS, options: { threshold: 0 } });
    for (const [i, text] of mixed.entries()) {
      assertSame(
        batched[i],
        (await classify(w, [text], { labels: LABELS, options: { threshold: 0 } }))[0],
        `item ${i}`,
      );
    }
  });
});

Deno.test("extract gliclass: prompt tokens in labels or texts, labels that do not fit: 400", async () => {
  await withWorker(async (w) => {
    const post = (items: Json[], params: Json) =>
      postJson(`${w.url}${URL_PATH}`, { items, params });
    const cases: [string, Json[], Json, RegExp][] = [
      ["label token in a label", [{ text: "a" }], { labels: ["<<LABEL>>"] }, /special token/],
      ["sep token in a label", [{ text: "a" }], { labels: ["x<<SEP>>y"] }, /special token/],
      ["prompt token in a text", [{ text: "a <<SEP>> b" }], { labels: LABELS }, /prompt tokens/],
      ["prompt token in the instruction", [{ text: "a" }], {
        labels: LABELS,
        instruction: "go <<LABEL>>",
      }, /instruction/],
      ["labels longer than the model", [{ text: "a" }], {
        labels: Array.from({ length: 40 }, (_, i) => `the label number ${i}`),
      }, /labels take/],
      ["hypothesis_template", [{ text: "a" }], {
        labels: LABELS,
        options: { hypothesis_template: "{}" },
      }, /hypothesis_template/],
    ];
    for (const [what, items, params, message] of cases) {
      const r = await post(items, params);
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.detail.message, message, what);
    }
  });
});
