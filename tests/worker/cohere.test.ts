/**
 * Cohere's rerank and embed on a worker, through the real `cohere-ai` SDK (`CohereClientV2` and
 * `CohereClient` with `environment` set to the worker): rerank answers what /v1/score answers
 * (cross-encoder logits, encode models' cosine), embed what /v1/encode answers (input types as
 * catalog prompts, embedding types as output dtypes, output_dimension as Matryoshka), and
 * truncation follows `truncate` and `max_tokens`.
 */
import assert from "node:assert/strict";
import { CohereClient, CohereClientV2, CohereError } from "cohere-ai";
import { type Json, postJson, startTestWorker, type TestWorker } from "./harness.ts";
import { fixtureIds } from "./expected.ts";
import { picture } from "../vision/helpers.ts";

const QUERY = "where do cats sleep";
const DOCS = ["cats sleep on the warm mat", "the stock market fell", "dogs play in the park"];

function clients(w: TestWorker): { v2: CohereClientV2; v1: CohereClient } {
  const opts = { token: "unused", environment: w.url, maxRetries: 0 };
  return { v2: new CohereClientV2(opts), v1: new CohereClient(opts) };
}

/** /v1/score's scores, in document order. */
async function nativeScores(w: TestWorker, model: string, docs = DOCS): Promise<number[]> {
  const r = await postJson(`${w.url}/v1/score/${model}`, {
    query: { text: QUERY },
    items: docs.map((text, i) => ({ id: `d${i}`, text })),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const byId = new Map(r.body.scores.map((e: Json) => [e.item_id, e.score]));
  return docs.map((_, i) => byId.get(`d${i}`) as number);
}

/** /v1/encode's dense values (JSON) for `texts` with `params`. */
async function nativeEncode(
  w: TestWorker,
  texts: string[],
  params: Json = {},
  model = "fixture/dense",
): Promise<number[][]> {
  const r = await postJson(`${w.url}/v1/encode/${model}`, {
    items: texts.map((text) => ({ text })),
    params,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.items.map((it: Json) => it.dense.values);
}

Deno.test("cohere rerank (v2 and v1 SDK): the scores and order of /v1/score, top_n, documents", async () => {
  const w = await startTestWorker();
  try {
    const { v1, v2 } = clients(w);
    for (const model of ["fixture/reranker", "fixture/dense"]) {
      const want = await nativeScores(w, model);
      const order = DOCS.map((_, i) => i).sort((a, b) => want[b] - want[a]);
      const r2 = await v2.rerank({ model, query: QUERY, documents: DOCS });
      assert.deepEqual(r2.results.map((r) => r.index), order, `${model} v2 order`);
      r2.results.forEach((r) => assert.equal(r.relevanceScore, want[r.index], `${model} v2`));
      assert.equal(r2.meta?.apiVersion?.version, "2");
      assert.match(r2.id ?? "", /^[0-9a-f]{32}$/);

      const top = await v2.rerank({ model, query: QUERY, documents: DOCS, topN: 2 });
      assert.deepEqual(top.results.map((r) => r.index), order.slice(0, 2));

      const r1 = await v1.rerank({
        model,
        query: QUERY,
        documents: [DOCS[0], { text: DOCS[1] }, { text: DOCS[2], source: "web" }],
        returnDocuments: true,
      });
      assert.deepEqual(r1.results.map((r) => r.index), order, `${model} v1 order`);
      for (const r of r1.results) {
        assert.equal(r.relevanceScore, want[r.index]);
        assert.equal(r.document?.text, DOCS[r.index]);
      }
      assert.equal(
        (r1.results.find((r) => r.index === 2)?.document as Json).source,
        "web",
        "an object document comes back whole",
      );
      assert.equal(r1.meta?.apiVersion?.version, "1");
    }
  } finally {
    await w.close();
  }
});

Deno.test("cohere rerank: max_tokens_per_doc cuts each document as a shorter text would be", async () => {
  const w = await startTestWorker();
  try {
    const { v2 } = clients(w);
    const long = ["cats sleep on the warm mat all day long", "the stock market fell sharply today"];
    // fixture tokens are words: the first 3 tokens of each document are its first 3 words.
    const short = long.map((d) => d.split(" ").slice(0, 3).join(" "));
    assert.equal(fixtureIds(short[0]).length - 2, 3);
    for (const model of ["fixture/reranker", "fixture/dense"]) {
      const want = await nativeScores(w, model, short);
      const r = await v2.rerank({ model, query: QUERY, documents: long, maxTokensPerDoc: 3 });
      for (const e of r.results) assert.equal(e.relevanceScore, want[e.index], model);
      const full = await nativeScores(w, model, long);
      assert.notEqual(full[0], want[0], `${model}: the cut changes the score`);
    }
  } finally {
    await w.close();
  }
});

Deno.test("cohere embed (v2 and v1 SDK): input types as prompts, every embedding type as /v1/encode's dtype", async () => {
  const w = await startTestWorker();
  try {
    const { v1, v2 } = clients(w);
    const texts = ["how do I bake bread", "stock markets fell sharply"];
    const cases: [string | undefined, Json][] = [
      ["search_query", { options: { input_type: "query" } }],
      ["search_document", { options: { input_type: "document" } }],
      ["classification", {}],
      ["clustering", {}],
    ];
    for (const [inputType, params] of cases) {
      const want = await nativeEncode(w, texts, params);
      const r = await v2.embed({
        model: "fixture/dense",
        texts,
        inputType: inputType as "search_query",
        embeddingTypes: ["float"],
      });
      assert.deepEqual(r.embeddings.float, want, `${inputType}`);
      assert.deepEqual(r.texts, texts);
      assert.equal(r.responseType, "embeddings_by_type");
    }
    // The prompt matters: a query is not embedded as a document.
    const q = await nativeEncode(w, texts, { options: { input_type: "query" } });
    const d = await nativeEncode(w, texts, { options: { input_type: "document" } });
    assert.notDeepEqual(q, d);

    // Every embedding type, from one call, as /v1/encode's output_dtype gives it.
    const all = await v2.embed({
      model: "fixture/dense",
      texts,
      inputType: "search_document",
      embeddingTypes: ["float", "int8", "uint8", "binary", "ubinary", "base64"],
    });
    const enc = async (output_dtype: string) =>
      await nativeEncode(w, texts, { output_dtype, options: { input_type: "document" } });
    assert.deepEqual(all.embeddings.int8, await enc("int8"));
    assert.deepEqual(all.embeddings.uint8, await enc("uint8"));
    const ubinary = await enc("ubinary");
    assert.deepEqual(all.embeddings.ubinary, ubinary);
    assert.deepEqual(all.embeddings.binary, ubinary.map((v) => v.map((b) => b - 128)));
    all.embeddings.base64!.forEach((b64, i) => {
      const bytes = Uint8Array.fromBase64(b64);
      assert.deepEqual(Array.from(new Float32Array(bytes.buffer)), all.embeddings.float![i]);
    });
    assert.equal(
      all.meta?.billedUnits?.inputTokens,
      texts.reduce((n, t) => n + fixtureIds("passage: " + t).length, 0),
    );

    // v1: no embedding_types answers plain floats; with them, by type.
    const floats = await v1.embed({ model: "fixture/dense", texts, inputType: "search_query" });
    assert.equal(floats.responseType, "embeddings_floats");
    assert.deepEqual(floats.embeddings, q);
    const typed = await v1.embed({
      model: "fixture/dense",
      texts,
      inputType: "search_query",
      embeddingTypes: ["int8"],
    });
    assert.equal(typed.responseType, "embeddings_by_type");
    if (typed.responseType === "embeddings_by_type") {
      assert.deepEqual(
        typed.embeddings.int8,
        await nativeEncode(w, texts, { output_dtype: "int8", options: { input_type: "query" } }),
      );
    }
  } finally {
    await w.close();
  }
});

Deno.test("cohere embed: output_dimension is Matryoshka; truncate END, START and NONE; max_tokens", async () => {
  const w = await startTestWorker();
  try {
    const { v2 } = clients(w);
    const text = "one two three four five six seven eight nine ten";
    const dim = await v2.embed({
      model: "fixture/dense",
      texts: [text],
      inputType: "clustering",
      embeddingTypes: ["float"],
      outputDimension: 8,
    });
    assert.deepEqual(
      dim.embeddings.float,
      await nativeEncode(w, [text], { options: { dimensions: 8 } }),
    );
    // max_tokens: the text's first (END, the default) or last (START) tokens, prompt aside.
    const words = text.split(" ");
    const embed = (extra: Json) =>
      v2.embed({
        model: "fixture/dense",
        texts: [text],
        inputType: "search_query",
        embeddingTypes: ["float"],
        ...extra,
      });
    const query = { options: { input_type: "query" } };
    assert.deepEqual(
      (await embed({ maxTokens: 4 })).embeddings.float,
      await nativeEncode(w, [words.slice(0, 4).join(" ")], query),
    );
    assert.deepEqual(
      (await embed({ maxTokens: 4, truncate: "START" })).embeddings.float,
      await nativeEncode(w, [words.slice(-4).join(" ")], query),
    );
    assert.deepEqual(
      (await embed({ maxTokens: 4, truncate: "END" })).embeddings.float,
      await nativeEncode(w, [words.slice(0, 4).join(" ")], query),
    );
    // NONE: a text over its room is an error, one within it is embedded as it is.
    const refused = await embed({ maxTokens: 4, truncate: "NONE" }).then(
      () => assert.fail("a text over max_tokens with truncate NONE is an error"),
      (e) => e,
    );
    assert.ok(refused instanceof CohereError);
    assert.equal(refused.statusCode, 400);
    assert.match((refused.body as Json).message, /longer than max_tokens 4.*truncate NONE/);
    assert.deepEqual(
      (await embed({ maxTokens: 10, truncate: "NONE" })).embeddings.float,
      await nativeEncode(w, [text], query),
    );
    // Over the model's own length (128 tokens): START keeps the end, NONE refuses.
    // 200 one-token words; 124 fit beside [CLS], [SEP] and the prompt's two tokens ("query :").
    const long = Array.from({ length: 200 }, (_, i) => words[i % 10]).join(" ");
    const end = long.split(" ").slice(-124).join(" ");
    assert.deepEqual(
      (await v2.embed({
        model: "fixture/dense",
        texts: [long],
        inputType: "search_query",
        embeddingTypes: ["float"],
        truncate: "START",
      })).embeddings.float,
      await nativeEncode(w, [end], query),
    );
    const tooLong = await postJson(`${w.url}/v2/embed`, {
      model: "fixture/dense",
      texts: [long],
      input_type: "search_query",
      truncate: "NONE",
    });
    assert.equal(tooLong.status, 400);
    assert.match(tooLong.body.message, /longer than the model's 124 tokens/);
  } finally {
    await w.close();
  }
});

Deno.test("cohere routes: X-Truncated-Items counts the texts cut by max_tokens, truncate or the model's length", async () => {
  const w = await startTestWorker();
  try {
    const text = "one two three four five six seven eight nine ten";
    const long = Array.from({ length: 200 }, () => "one").join(" ");
    const cut = async (path: string, body: Json) => {
      const r = await postJson(`${w.url}${path}`, { model: "fixture/dense", ...body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.headers.get("x-truncated-items");
    };
    const texts = [text, "one two"];
    assert.equal(await cut("/v2/embed", { texts, input_type: "search_query" }), "0");
    assert.equal(await cut("/v2/embed", { texts, input_type: "search_query", max_tokens: 4 }), "1");
    for (const truncate of ["START", "END"]) {
      const body = { texts, input_type: "search_query", max_tokens: 4, truncate };
      assert.equal(await cut("/v2/embed", body), "1", truncate);
      const own = { texts: [long, text], input_type: "search_query", truncate };
      assert.equal(await cut("/v2/embed", own), "1", `${truncate}: the model's length`);
    }
    assert.equal(await cut("/v1/embed", { texts, max_tokens: 10, truncate: "NONE" }), "0");
    // Rerank: a document over max_tokens_per_doc, on a cross-encoder and an encode model.
    for (const model of ["fixture/reranker", "fixture/dense"]) {
      const docs = [text, "one two"];
      const rerank = { model, query: QUERY, documents: docs };
      assert.equal(await cut("/v2/rerank", rerank), "0", model);
      assert.equal(await cut("/v2/rerank", { ...rerank, max_tokens_per_doc: 3 }), "1", model);
    }
  } finally {
    await w.close();
  }
});

Deno.test("cohere routes: errors carry Cohere's message beside detail, with the real cause", async () => {
  const w = await startTestWorker();
  try {
    const { v2 } = clients(w);
    const unknown: Json = await v2.rerank({ model: "x/unknown", query: "q", documents: ["d"] })
      .then(() => assert.fail("unknown model"), (e) => e);
    assert.equal(unknown.statusCode, 404);
    assert.match(unknown.body.message, /model 'x\/unknown' is not in the catalog/);
    assert.equal(unknown.body.detail.code, "MODEL_NOT_FOUND");
    const cases: [string, Json, RegExp][] = [
      ["/v2/rerank", { model: "fixture/reranker", query: "q", documents: [] }, /documents/],
      ["/v2/rerank", { query: "q", documents: ["d"] }, /model/],
      [
        "/v1/rerank",
        { model: "fixture/reranker", query: "q", documents: [{ title: "x" }] },
        /documents/,
      ],
      ["/v1/rerank", {
        model: "fixture/reranker",
        query: "q",
        documents: ["d"],
        rank_fields: ["title"],
      }, /rank_fields/],
      [
        "/v2/rerank",
        { model: "fixture/reranker", query: "q", documents: ["d"], top_n: 0 },
        /top_n/,
      ],
      ["/v2/embed", { model: "fixture/dense", texts: [] }, /texts/],
      ["/v2/embed", {
        model: "fixture/dense",
        texts: ["a"],
        images: ["data:image/png;base64,AA=="],
      }, /one of texts, images or inputs, not several/],
      [
        "/v2/embed",
        { model: "fixture/dense", texts: ["a"], embedding_types: ["int4"] },
        /embedding_types/,
      ],
      ["/v2/embed", { model: "fixture/dense", texts: ["a"], truncate: "MIDDLE" }, /truncate/],
      [
        "/v2/embed",
        { model: "fixture/dense", texts: ["a"], output_dimension: 64 },
        /output_dimension 64 exceeds/,
      ],
      ["/v2/embed", { model: "fixture/sparse", texts: ["a"] }, /no dense output/],
      ["/v2/embed", { model: "fixture/clip", images: ["data:image/gif;base64,R0lG"] }, /data URI/],
      [
        "/v2/embed",
        { model: "fixture/dense", images: ["data:image/png;base64,AAAA"] },
        /images\[0\] has images/,
      ],
      ["/v2/rerank", { model: "fixture/gliner", query: "q", documents: ["d"] }, /gliner/],
    ];
    for (const [path, body, message] of cases) {
      const r = await postJson(`${w.url}${path}`, body);
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.message, message, JSON.stringify(body));
      assert.equal(r.body.message, r.body.detail.message);
    }
  } finally {
    await w.close();
  }
});

Deno.test("cohere embed: images as data URIs on an image model equal /v1/encode's image items", async () => {
  const w = await startTestWorker();
  try {
    const { v2 } = clients(w);
    const png = await picture(64, 48, "png", 3);
    const jpeg = await picture(40, 40, "jpeg", 5);
    const r = await v2.embed({
      model: "fixture/clip",
      images: [
        `data:image/png;base64,${png.toBase64()}`,
        `data:image/jpeg;base64,${jpeg.toBase64()}`,
      ],
      inputType: "image",
      embeddingTypes: ["float"],
    });
    const enc = await postJson(`${w.url}/v1/encode/fixture/clip`, {
      items: [
        { images: [{ data: png.toBase64(), format: "png" }] },
        { images: [{ data: jpeg.toBase64(), format: "jpeg" }] },
      ],
    });
    assert.equal(enc.status, 200, JSON.stringify(enc.body));
    assert.deepEqual(r.embeddings.float, enc.body.items.map((it: Json) => it.dense.values));
    assert.deepEqual(r.texts, []);
  } finally {
    await w.close();
  }
});
