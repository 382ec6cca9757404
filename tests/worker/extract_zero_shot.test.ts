/**
 * POST /v1/extract with fixture/nli (zero-shot classification through NLI). Expected scores come
 * from direct onnxruntime runs of each (text, hypothesis) pair, with the entailment and
 * contradiction logits taken from config.json's id2label and the probabilities written out here.
 */
import assert from "node:assert/strict";
import { ensureFixtures } from "@svc/fixture-models";
import { NLI_LABELS } from "@svc/fixture-models/models";
import {
  fixtureTokenizer,
  type OpenModel,
  openModel,
  runModel,
  textFeeds,
} from "../fixtures/testing.ts";
import { assertExtractKeys, type Json, postJson, type TestWorker, withWorker } from "./harness.ts";
import { decodeMsgpackView } from "./msgpack_view.ts";

const URL_PATH = "/v1/extract/fixture/nli";
const LABELS = ["sports", "politics", "cooking", "weather", "finance"];
const TEXTS = [
  "Alice scored twice and the team won the cup.",
  "Bake bread in a hot oven for an hour.",
  "the stock market fell; investors sold shares in london",
];
const ENTAIL = NLI_LABELS.indexOf("entailment");
const CONTRA = NLI_LABELS.indexOf("contradiction");

interface Cls {
  label: string;
  score: number;
}

let model: Promise<OpenModel> | undefined;
const tok = fixtureTokenizer();

/** Entailment and contradiction logits of one (premise, hypothesis) pair, run alone. */
async function pairLogits(premise: string, hyp: string): Promise<{ e: number; c: number }> {
  model ??= ensureFixtures().then(async (fx) =>
    openModel(await Deno.readFile(`${fx}/cache/fixture/nli/onnx/model.onnx`))
  );
  const { data } = (await runModel(await model, textFeeds(tok, [[premise, hyp]], true))).logits;
  return { e: data[ENTAIL], c: data[CONTRA] };
}

/**
 * Expected classifications: single-label p_k = exp(e_k) / Σ_j exp(e_j) over the labels;
 * multi-label p_k = exp(e_k) / (exp(e_k) + exp(c_k)); highest first.
 */
async function expected(
  text: string,
  labels: string[],
  opts: { template?: string; prefix?: string; multi?: boolean } = {},
): Promise<Cls[]> {
  const template = opts.template ?? "This example is {}.";
  const logits = [];
  for (const l of labels) {
    logits.push(await pairLogits(text, (opts.prefix ?? "") + template.replace("{}", l)));
  }
  const total = logits.reduce((s, x) => s + Math.exp(x.e), 0);
  const scores = logits.map((x) =>
    opts.multi ? Math.exp(x.e) / (Math.exp(x.e) + Math.exp(x.c)) : Math.exp(x.e) / total
  );
  return labels.map((label, k) => ({ label, score: scores[k] }))
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

Deno.test("extract zero-shot: single-label softmax across labels matches direct runs (JSON and msgpack)", async () => {
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${URL_PATH}`, {
      items: TEXTS.map((text, i) => ({ id: `t${i}`, text })),
      params: { labels: LABELS },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    for (const [i, text] of TEXTS.entries()) {
      const item = r.body.items[i];
      assertExtractKeys(item, ["classifications"]);
      assert.equal(item.id, `t${i}`);
      const got: Cls[] = item.classifications;
      assertSame(got, await expected(text, LABELS), `item ${i}`);
      const sum = got.reduce((s, c) => s + c.score, 0);
      assert.ok(Math.abs(sum - 1) < 1e-6, `sums to 1 (${sum})`);
      for (let k = 1; k < got.length; k++) assert.ok(got[k - 1].score >= got[k].score, "sorted");
    }
    const res = await fetch(`${w.url}${URL_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ items: [{ text: TEXTS[0] }], params: { labels: LABELS } }),
    });
    assert.equal(res.headers.get("content-type"), "application/msgpack");
    const packed = decodeMsgpackView(new Uint8Array(await res.arrayBuffer()));
    assertSame(packed.items[0].classifications, await expected(TEXTS[0], LABELS), "msgpack");
  });
});

Deno.test("extract zero-shot: multi-label, template, instruction and threshold", async () => {
  await withWorker(async (w) => {
    const [multi] = await classify(w, [TEXTS[1]], {
      labels: LABELS,
      options: { multi_label: true },
    });
    assertSame(multi, await expected(TEXTS[1], LABELS, { multi: true }), "multi-label");
    const sum = multi.reduce((s, c) => s + c.score, 0);
    assert.ok(Math.abs(sum - 1) > 1e-3, "independent scores do not sum to 1");

    const template = "The topic of this text is {} .";
    const [templ] = await classify(w, [TEXTS[0]], {
      labels: LABELS,
      options: { hypothesis_template: template },
    });
    assertSame(templ, await expected(TEXTS[0], LABELS, { template }), "template");

    const [instructed] = await classify(w, [TEXTS[2]], {
      labels: LABELS,
      instruction: "Classify the news story.",
    });
    assertSame(
      instructed,
      await expected(TEXTS[2], LABELS, { prefix: "Classify the news story. " }),
      "instruction before each hypothesis",
    );

    const all = await expected(TEXTS[0], LABELS, { multi: true });
    const cut = all[2].score;
    const [kept] = await classify(w, [TEXTS[0]], {
      labels: LABELS,
      options: { multi_label: true, threshold: cut },
    });
    assertSame(kept, all.filter((c) => c.score >= cut), "threshold");
  });
});

Deno.test("extract zero-shot: many labels and items are cut into token-budget runs without changing results", async () => {
  const labels = Array.from({ length: 24 }, (_, i) => `topic number ${i} of the news`);
  await withWorker(async (w) => {
    const batched = await classify(w, TEXTS, { labels });
    for (const [i, text] of TEXTS.entries()) {
      assertSame(batched[i], await expected(text, labels), `item ${i}`);
    }
  }, { SVC_MAX_RUN_TOKENS: "160" });
});

Deno.test("extract zero-shot: bad params are 400 and name the problem", async () => {
  await withWorker(async (w) => {
    const cases: [string, Json, RegExp][] = [
      ["no labels", {}, /labels/],
      ["special token label", { labels: ["sports", "[SEP]"] }, /special token/],
      ["control character", { labels: ["spo\u0007rts"] }, /control/],
      [
        "template without {}",
        { labels: LABELS, options: { hypothesis_template: "About it." } },
        /\{\}/,
      ],
      ["template with two {}", {
        labels: LABELS,
        options: { hypothesis_template: "{} or {}" },
      }, /\{\}/],
      ["template with [SEP]", {
        labels: LABELS,
        options: { hypothesis_template: "[SEP] {}" },
      }, /\[SEP\]/],
      [
        "multi_label not boolean",
        { labels: LABELS, options: { multi_label: "yes" } },
        /multi_label/,
      ],
      [
        "entity_labels on NLI",
        { labels: LABELS, options: { entity_labels: ["x"] } },
        /entity_labels/,
      ],
      ["output_schema on NLI", {
        labels: LABELS,
        output_schema: { type: "object", properties: {} },
      }, /output_schema/],
    ];
    for (const [what, params, message] of cases) {
      const r = await postJson(`${w.url}${URL_PATH}`, { items: [{ text: "hello" }], params });
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.detail.code, "INVALID_INPUT", what);
      assert.match(r.body.detail.message, message, what);
    }
    const gliner = await postJson(`${w.url}/v1/extract/fixture/gliner`, {
      items: [{ text: "hello" }],
      params: { labels: ["person"], options: { hypothesis_template: "It is {}." } },
    });
    assert.equal(gliner.status, 400);
    assert.match(gliner.body.detail.message, /hypothesis_template/);
  });
});
