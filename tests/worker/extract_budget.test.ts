/**
 * The work bound of one extract item (SVC_MAX_EXTRACT_ITEM_TOKENS) and the spans kept per label
 * (SVC_MAX_SPANS_PER_LABEL), over the fixture models: the count the bound is checked against is
 * the count the model then reads (its tokens metric), to the token; an item one token over is a
 * 400 naming the setting; a span model keeps the best spans of each label only.
 */
import assert from "node:assert/strict";
import { scrape, sum } from "../observability/helpers/prom_text.ts";
import { type Json, postJson, withWorker } from "./harness.ts";

/** Tokens `model` has run on worker `url` so far. */
async function tokensRun(url: string, model: string): Promise<number> {
  return sum(await scrape(url), "svc_tokens_processed_total", { model });
}

const LONG_TEXT = Array.from({ length: 300 }, (_, i) => `word${i % 37} and thing${i % 11}`)
  .join(" ");

interface Case {
  model: string;
  body: Json;
  /** What the 400 says the tokens go to. */
  what: RegExp;
}

const CASES: Case[] = [
  {
    // 900 words: windows of 64 words read with the label prompt.
    model: "fixture/gliner",
    body: { items: [{ text: LONG_TEXT }], params: { labels: ["person", "thing", "place"] } },
    what: /windows of 3 labels/,
  },
  {
    // Items × labels pairs.
    model: "fixture/nli",
    body: {
      items: [{ text: LONG_TEXT.slice(0, 400) }],
      params: { labels: ["sports", "politics", "cooking", "weather"] },
    },
    what: /4 text-hypothesis pairs, one per label/,
  },
];

for (const c of CASES) {
  Deno.test(`extract budget: ${c.model} is refused one token over what it reads, named`, async () => {
    let exact = 0;
    await withWorker(async (w) => {
      const before = await tokensRun(w.url, c.model);
      const r = await postJson(`${w.url}/v1/extract/${c.model}`, c.body);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      exact = (await tokensRun(w.url, c.model)) - before;
    });
    assert.ok(exact > 256, `${exact} tokens`);
    await withWorker(async (w) => {
      const r = await postJson(`${w.url}/v1/extract/${c.model}`, c.body);
      assert.equal(r.status, 200, "at the bound: answered");
    }, { SVC_MAX_EXTRACT_ITEM_TOKENS: String(exact) });
    await withWorker(async (w) => {
      const before = await tokensRun(w.url, c.model);
      const r = await postJson(`${w.url}/v1/extract/${c.model}`, c.body);
      assert.equal(r.status, 400);
      assert.equal(r.body.detail.code, "INVALID_INPUT");
      assert.match(
        r.body.detail.message,
        new RegExp(
          `needs ${exact} model tokens .*at most ${exact - 1} \\(SVC_MAX_EXTRACT_ITEM_TOKENS\\)`,
        ),
      );
      assert.match(r.body.detail.message, c.what);
      assert.equal(await tokensRun(w.url, c.model), before, "the model never ran it");
    }, { SVC_MAX_EXTRACT_ITEM_TOKENS: String(exact - 1) });
  });
}

Deno.test("extract budget: a relations item is costed for its relation pass before anything runs", async () => {
  const body = {
    items: [{ text: LONG_TEXT }],
    params: {
      labels: Array.from({ length: 8 }, (_, k) => `relation ${k}`),
      options: { entity_labels: ["person", "thing"], threshold: 0 },
    },
  };
  await withWorker(async (w) => {
    const before = await tokensRun(w.url, "fixture/gliner-multitask");
    const r = await postJson(`${w.url}/v1/extract/fixture/gliner-multitask`, body);
    assert.equal(r.status, 400);
    assert.match(r.body.detail.message, /16 heads × 8 relation types in \d+ prompts/);
    assert.match(r.body.detail.message, /SVC_MAX_EXTRACT_ITEM_TOKENS/);
    assert.equal(await tokensRun(w.url, "fixture/gliner-multitask"), before);
  }, { SVC_MAX_EXTRACT_ITEM_TOKENS: "20000" });
});

Deno.test("spans per label: at threshold 0 each label keeps its best spans only", async () => {
  const body = {
    items: [{ text: LONG_TEXT.slice(0, 600) }],
    params: { labels: ["person", "thing"], options: { threshold: 0 } },
  };
  let all: Json[] = [];
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}/v1/extract/fixture/gliner`, body);
    assert.equal(r.status, 200);
    all = r.body.items[0].entities;
  });
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}/v1/extract/fixture/gliner`, body);
    assert.equal(r.status, 200);
    const kept: Json[] = r.body.items[0].entities;
    // Labels compete for words (flat NER): a label's best spans may lose to another's.
    for (const label of ["person", "thing"]) {
      const mine = kept.filter((e) => e.label === label);
      assert.ok(mine.length <= 2, `${label}: ${mine.length} entities`);
    }
    // Greedy selection starts from the best span: it is there with either bound.
    const best = (list: Json[]) => list.reduce((a, b) => (b.score > a.score ? b : a));
    assert.deepEqual(best(kept), best(all));
    assert.ok(all.length > kept.length, `${all.length} entities without the tight bound`);
  }, { SVC_MAX_SPANS_PER_LABEL: "2" });
});

Deno.test("extract budget: heads longer than costed are dropped, lowest score first, to stay within it", async () => {
  // Unknown words split into many sub-tokens, so the heads are longer than the two tokens each the
  // relation pass is costed with before they are known.
  const text = "Zyxwvut Qrstuvw Abcdefghijk Lmnopqrstu Vwxyzab Cdefghijk Lmnopq Rstuvwx Yzabcde " +
    "Fghijklm Nopqrst Uvwxyzab Cdefgh Ijklmnop Qrstuv Wxyzabc Defghij Klmnopq Rstuvw Xyzabcd";
  const body = {
    items: [{ text }],
    params: {
      labels: ["works for", "lives in", "knows"],
      options: { entity_labels: ["person", "organization", "location"], threshold: 0 },
    },
  };
  const model = "fixture/gliner-multitask";
  const path = `/v1/extract/${model}`;
  let full = 0;
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${path}`, body);
    assert.equal(r.status, 200);
    full = await tokensRun(w.url, model);
  });
  let costed = 0;
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${path}`, body);
    assert.equal(r.status, 400);
    costed = Number(/needs (\d+) model tokens/.exec(r.body.detail.message)![1]);
  }, { SVC_MAX_EXTRACT_ITEM_TOKENS: "256" });
  assert.ok(costed < full, `costed ${costed}, read ${full}: the heads are longer than assumed`);
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${path}`, body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const read = await tokensRun(w.url, model);
    assert.ok(read <= costed, `read ${read} tokens, bound ${costed}`);
    // Relations still come, from the heads kept: entity texts of the item.
    const item = r.body.items[0];
    const texts = new Set(item.entities.map((e: Json) => e.text));
    assert.ok(item.relations.length > 0);
    for (const rel of item.relations) assert.ok(texts.has(rel.head), `${rel.head} is an entity`);
  }, { SVC_MAX_EXTRACT_ITEM_TOKENS: String(costed) });
});

Deno.test("extract budget: relations between named entities are costed exactly, with no entity pass", async () => {
  // The SIE clients' relation request: the entities in item metadata. Their relation pass is
  // all the model reads, and its cost is known before the batch runs: to the token.
  const text = LONG_TEXT.slice(0, 400);
  const body = {
    items: [{
      text,
      metadata: { entities: [{ text: "word1" }, { text: "thing2" }, { text: "word1" }] },
    }],
    params: { labels: ["works for", "lives in", "knows"], options: { threshold: 0 } },
  };
  const model = "fixture/gliner-multitask";
  const path = `/v1/extract/${model}`;
  let read = 0;
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${path}`, body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    read = await tokensRun(w.url, model);
    assert.ok(r.body.items[0].relations.length > 0, "threshold 0 relates them");
  });
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${path}`, body);
    assert.equal(r.status, 400);
    assert.match(
      r.body.detail.message,
      new RegExp(`needs ${read} model tokens \\(2 entities × 3 relation types in \\d+ prompts?, `),
    );
    assert.equal(await tokensRun(w.url, model), 0, "the model never ran it");
  }, { SVC_MAX_EXTRACT_ITEM_TOKENS: String(read - 1) });
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${path}`, body);
    assert.equal(r.status, 200);
  }, { SVC_MAX_EXTRACT_ITEM_TOKENS: String(read) });
});

Deno.test("extract budget: one item over the bound refuses its request before any of it runs", async () => {
  await withWorker(async (w) => {
    const before = await tokensRun(w.url, "fixture/gliner");
    const r = await postJson(`${w.url}/v1/extract/fixture/gliner`, {
      items: [{ text: "Alice lives in Paris." }, { text: LONG_TEXT }, { text: "Bob too." }],
      params: { labels: ["person", "place"] },
    });
    assert.equal(r.status, 400);
    assert.match(r.body.detail.message, /SVC_MAX_EXTRACT_ITEM_TOKENS/);
    // The short items shared its batch: they were not run either.
    assert.equal(await tokensRun(w.url, "fixture/gliner"), before);
  }, { SVC_MAX_EXTRACT_ITEM_TOKENS: "2000" });
});

Deno.test("extract budget: a request is bounded as a whole, and a heavy one says its cost", async () => {
  const body = {
    items: Array.from({ length: 8 }, (_, i) => ({ text: `${LONG_TEXT.slice(0, 600)} ${i}` })),
    params: { labels: ["person", "thing", "place"] },
  };
  let cost = 0;
  await withWorker(async (w) => {
    // Every item is well under the item bound; together they are what the request costs.
    const before = await tokensRun(w.url, "fixture/gliner");
    const res = await fetch(`${w.url}/v1/extract/fixture/gliner`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    cost = Number(res.headers.get("x-svc-extract-tokens"));
    assert.equal(cost, (await tokensRun(w.url, "fixture/gliner")) - before, "the cost is what ran");
  }, { SVC_MAX_EXTRACT_ITEM_TOKENS: "1000" });
  assert.ok(cost > 1000, `${cost}`);
  await withWorker(async (w) => {
    const before = await tokensRun(w.url, "fixture/gliner");
    const r = await postJson(`${w.url}/v1/extract/fixture/gliner`, body);
    assert.equal(r.status, 400);
    assert.match(
      r.body.detail.message,
      new RegExp(
        `needs ${cost} model tokens for its 8 items.*at most ${cost - 1} ` +
          "\\(SVC_MAX_EXTRACT_REQUEST_TOKENS\\)",
      ),
    );
    assert.equal(await tokensRun(w.url, "fixture/gliner"), before, "nothing of it ran");
    // A light request is answered without the header.
    const small = await fetch(`${w.url}/v1/extract/fixture/gliner`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ items: [{ text: "Alice lives in Paris." }], params: body.params }),
    });
    assert.equal(small.status, 200);
    await small.body?.cancel();
    assert.equal(small.headers.get("x-svc-extract-tokens"), null);
  }, { SVC_MAX_EXTRACT_REQUEST_TOKENS: String(cost - 1), SVC_MAX_EXTRACT_ITEM_TOKENS: "1000" });
});
