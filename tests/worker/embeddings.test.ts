import assert from "node:assert/strict";
import OpenAI from "openai";
import { postJson, startFakeBackendWorker, startTestWorker } from "./harness.ts";
import { fixtureIds } from "./expected.ts";

const TEXTS = ["how do I bake bread", "stock markets fell sharply", "hello"];

Deno.test("openai client with defaults (base64) returns exactly the /v1/encode vectors", async () => {
  const w = await startTestWorker();
  try {
    const client = new OpenAI({ apiKey: "unused", baseURL: `${w.url}/v1`, maxRetries: 0 });
    const res = await client.embeddings.create({ model: "fixture/dense", input: TEXTS });
    const enc = await postJson(`${w.url}/v1/encode/fixture/dense`, {
      items: TEXTS.map((text) => ({ text })),
    });
    assert.equal(res.object, "list");
    assert.equal(res.model, "fixture/dense");
    assert.equal(res.data.length, TEXTS.length);
    res.data.forEach((d, i) => {
      assert.equal(d.index, i);
      assert.equal(d.object, "embedding");
      assert.deepEqual(d.embedding, enc.body.items[i].dense.values, `text ${i}`);
    });
    const tokens = TEXTS.reduce((s, t) => s + fixtureIds(t).length, 0);
    assert.equal(res.usage.prompt_tokens, tokens);
    assert.equal(res.usage.total_tokens, tokens);

    const floats = await client.embeddings.create({
      model: "fixture/dense",
      input: "hello",
      encoding_format: "float",
    });
    assert.deepEqual(floats.data[0].embedding, enc.body.items[2].dense.values);
  } finally {
    await w.close();
  }
});

Deno.test("embeddings: dimensions truncates and re-normalises; bad values are 400", async () => {
  const w = await startTestWorker();
  try {
    const client = new OpenAI({ apiKey: "unused", baseURL: `${w.url}/v1`, maxRetries: 0 });
    const res = await client.embeddings.create({
      model: "fixture/dense",
      input: "hello",
      dimensions: 8,
    });
    const v = res.data[0].embedding;
    assert.equal(v.length, 8);
    assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5);
    for (const dimensions of [0, -3, 33, 1.5]) {
      const r = await postJson(`${w.url}/v1/embeddings`, {
        model: "fixture/dense",
        input: "hello",
        dimensions,
      });
      assert.equal(r.status, 400, `dimensions ${dimensions}`);
      assert.equal(r.body.detail.code, "INVALID_INPUT");
    }
  } finally {
    await w.close();
  }
});

Deno.test("embeddings: token-id inputs, empty input, unknown model, non-dense model", async () => {
  const w = await startTestWorker();
  try {
    const ids = fixtureIds("hello world").slice(1, -1); // body tokens without [CLS]/[SEP]
    const byIds = await postJson(`${w.url}/v1/embeddings`, {
      model: "fixture/dense",
      input: [ids, ids],
      encoding_format: "float",
    });
    const byText = await postJson(`${w.url}/v1/embeddings`, {
      model: "fixture/dense",
      input: "hello world",
    });
    assert.equal(byIds.status, 200);
    assert.deepEqual(byIds.body.data[0].embedding, byText.body.data[0].embedding);
    assert.deepEqual(byIds.body.data[1].embedding, byText.body.data[0].embedding);
    const single = await postJson(`${w.url}/v1/embeddings`, { model: "fixture/dense", input: ids });
    assert.deepEqual(single.body.data[0].embedding, byText.body.data[0].embedding);

    const outOfVocab = await postJson(`${w.url}/v1/embeddings`, {
      model: "fixture/dense",
      input: [99_999_999],
    });
    assert.equal(outOfVocab.status, 400);
    assert.match(outOfVocab.body.detail.message, /vocabulary/);

    assert.equal(
      (await postJson(`${w.url}/v1/embeddings`, { model: "fixture/dense", input: [] })).status,
      400,
    );
    const nf = await postJson(`${w.url}/v1/embeddings`, { model: "x/y", input: "a" });
    assert.equal(nf.status, 404);
    const sparse = await postJson(`${w.url}/v1/embeddings`, {
      model: "fixture/sparse",
      input: "a",
    });
    assert.equal(sparse.status, 400);
  } finally {
    await w.close();
  }
});

Deno.test("openai client: errors carry OpenAI's envelope beside detail; models.list() lists the catalog", async () => {
  const w = await startFakeBackendWorker();
  try {
    const client = new OpenAI({ apiKey: "unused", baseURL: `${w.url}/v1`, maxRetries: 0 });
    const err = await client.embeddings.create({ model: "x/unknown", input: "a" }).then(
      () => assert.fail("an unknown model is an error"),
      (e) => e,
    );
    assert.ok(err instanceof OpenAI.NotFoundError, String(err));
    assert.equal(err.status, 404);
    assert.match(err.message, /^404 model 'x\/unknown' is not in the catalog/);
    assert.equal(err.code, "model_not_found");
    assert.equal(err.param, "model");
    assert.equal(err.type, "invalid_request_error");
    const bad = await client.embeddings.create({ model: "fixture/sparse", input: "a" }).then(
      () => assert.fail("a model without dense output is an error"),
      (e) => e,
    );
    assert.equal(bad.status, 400);
    assert.match(bad.message, /has no dense output/);
    // The native body stays beside the envelope.
    const raw = await postJson(`${w.url}/v1/embeddings`, { model: "x/unknown", input: "a" });
    assert.equal(raw.body.detail.code, "MODEL_NOT_FOUND");
    assert.equal(raw.body.error.message, raw.body.detail.message);

    const ids: string[] = [];
    for await (const m of client.models.list()) {
      assert.equal(m.object, "model");
      assert.equal(typeof m.created, "number");
      assert.equal(m.owned_by, "fixture");
      ids.push(m.id);
    }
    const listed = await (await fetch(`${w.url}/v1/models`)).json();
    assert.deepEqual(ids, listed.models.map((m: { name: string }) => m.name));
    assert.ok(ids.includes("fixture/dense"));
    assert.equal(listed.object, "list");
  } finally {
    await w.close();
  }
});
