import assert from "node:assert/strict";
import { float16BitsToNumber } from "@svc/shared/codec/float16";
import { type Json, postJson, withFakeBackendWorker, withWorker } from "./harness.ts";
import { VERSION } from "@svc/shared/version";
import { decodeMsgpackView } from "./msgpack_view.ts";
import { expectedDense, expectedSparse, fixtureIds, maxDiff } from "./expected.ts";

const TEXTS = [
  "the cat sat on the mat",
  "hello world",
  "a much longer sentence about the weather and the city and the people who live there",
];

Deno.test("encode dense: values match a direct ONNX run, ids echoed, timing present", async () => {
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}/v1/encode/fixture/dense`, {
      items: TEXTS.map((text, i) => i === 1 ? { text } : { id: `t${i}`, text }),
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.model, "fixture/dense");
    const want = await expectedDense("dense", TEXTS);
    assert.equal(r.body.items.length, TEXTS.length, "one result per item");
    r.body.items.forEach((item: Json, i: number) => {
      if (i === 1) assert.equal("id" in item, false, "missing id stays missing");
      else assert.equal(item.id, `t${i}`);
      assert.equal(item.dense.dims, 32);
      assert.equal(item.dense.dtype, "float32");
      assert.ok(maxDiff(item.dense.values, want[i]) < 1e-4, `item ${i} differs`);
    });
    for (const k of ["total_ms", "queue_ms", "tokenization_ms", "inference_ms"]) {
      assert.equal(typeof r.body.timing[k], "number", k);
    }
    for (const h of ["x-total-time", "x-queue-time", "x-tokenization-time", "x-inference-time"]) {
      assert.match(r.headers.get(h) ?? "", /^\d+\.\d\d$/, h);
    }
    assert.match(r.headers.get("x-trace-id") ?? "", /^[0-9a-f]{32}$/);
    assert.equal(r.headers.get("x-svc-server-version"), VERSION);
    // A caller's well-formed trace id comes back; a malformed one is replaced.
    for (const [sent, echoed] of [["my-trace.1", true], ["bad trace!", false]] as const) {
      for (const path of ["/v1/encode/fixture/dense", "/v1/embeddings"]) {
        const res = await fetch(`${w.url}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json", "X-Trace-ID": sent },
          body: JSON.stringify({ items: [{ text: "hi" }], model: "fixture/dense", input: "hi" }),
        });
        await res.body?.cancel();
        assert.equal(res.status, 200, path);
        const got = res.headers.get("x-trace-id");
        if (echoed) assert.equal(got, sent, path);
        else assert.match(got ?? "", /^[0-9a-f]{32}$/, path);
      }
    }
  });
});

Deno.test("encode: msgpack response carries numpy-style arrays; dtypes convert per docs/api.md", async () => {
  await withWorker(async (w) => {
    const want = (await expectedDense("dense", ["hello world"]))[0];
    for (const dtype of ["float32", "float16", "int8", "uint8", "binary", "ubinary"]) {
      const res = await fetch(`${w.url}/v1/encode/fixture/dense`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ items: [{ text: "hello world" }], params: { output_dtype: dtype } }),
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/msgpack");
      const body = decodeMsgpackView(new Uint8Array(await res.arrayBuffer()));
      const dense = body.items[0].dense;
      assert.equal(dense.dims, 32);
      assert.equal(dense.dtype, dtype);
      const arr = dense.values;
      assert.equal(arr.nd, true);
      const data: Uint8Array = arr.data;
      if (dtype === "float32") {
        assert.equal(arr.type, "<f4");
        assert.deepEqual(arr.shape, [32]);
        const f = new Float32Array(data.slice().buffer);
        assert.ok(maxDiff(f, want) < 1e-4);
      } else if (dtype === "float16") {
        assert.equal(arr.type, "<f2");
        const h = new Uint16Array(data.slice().buffer);
        assert.ok(maxDiff(Array.from(h, float16BitsToNumber), want) < 2e-3);
      } else if (dtype === "int8") {
        assert.equal(arr.type, "|i1");
        const q = new Int8Array(data.slice().buffer);
        const max = Math.max(...want.map(Math.abs));
        want.forEach((x, i) => assert.ok(Math.abs(q[i] - Math.round(x / max * 127)) <= 1));
      } else if (dtype === "uint8") {
        assert.equal(arr.type, "|u1");
        assert.deepEqual(arr.shape, [32]);
        const min = Math.min(...want);
        const max = Math.max(...want);
        want.forEach((x, i) => {
          const expected = Math.round((x - min) / (max - min) * 255);
          assert.ok(Math.abs(data[i] - expected) <= 1, `uint8 ${i}: ${data[i]} vs ${expected}`);
        });
        assert.ok(data.includes(0) && data.includes(255), "min → 0 and max → 255");
      } else {
        assert.equal(arr.type, "|u1");
        assert.deepEqual(arr.shape, [4]);
        for (let i = 0; i < 32; i++) {
          const bit = (data[i >> 3] >> (7 - (i & 7))) & 1;
          assert.equal(bit, want[i] > 0 ? 1 : 0);
        }
      }
    }
  });
});

Deno.test("encode: prompts by input_type, instruction prefix, profile dimensions, truncation", async () => {
  await withWorker(async (w) => {
    const url = `${w.url}/v1/encode/fixture/dense`;
    const q = await postJson(url, {
      items: [{ text: "red apples" }],
      params: { options: { input_type: "query" } },
    });
    const [prompted, instructed] = await expectedDense("dense", [
      "query: red apples",
      "find fruit: red apples",
    ]);
    assert.ok(maxDiff(q.body.items[0].dense.values, prompted) < 1e-4);
    const ins = await postJson(url, {
      items: [{ text: "red apples" }],
      params: { instruction: "find fruit: " },
    });
    assert.ok(maxDiff(ins.body.items[0].dense.values, instructed) < 1e-4);

    // Non-default profile served as `model:profile` (raw and percent-encoded): Matryoshka 16.
    for (const path of ["fixture/dense:small", "fixture%2Fdense%3Asmall"]) {
      const p = await postJson(`${w.url}/v1/encode/${path}`, { items: [{ text: "red apples" }] });
      assert.equal(p.status, 200, path);
      assert.equal(p.body.items[0].dense.dims, 16);
      const v: number[] = p.body.items[0].dense.values;
      assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5, "re-normalised");
    }

    // Far longer than max_sequence_length (128): truncated, not an error. Every word is one token,
    // so the model must see exactly [CLS] + the first 126 words + [SEP].
    const words = Array.from({ length: 400 }, (_, i) => (i % 2 ? "cat" : "dog"));
    const long = words.join(" ");
    assert.equal(fixtureIds(long).length, 402, "one token per word: the text really is too long");
    const t = await postJson(url, { items: [{ text: long }] });
    assert.equal(t.status, 200);
    const [head] = await expectedDense("dense", [words.slice(0, 126).join(" ")]);
    assert.ok(maxDiff(t.body.items[0].dense.values, head) < 1e-4, "truncated to the first 126");
    // It says so: one of the request's items was cut (the short ones, and a text of exactly
    // 126 words, are not).
    assert.equal(t.headers.get("x-truncated-items"), "1");
    const exact = words.slice(0, 126).join(" ");
    const mixed = await postJson(url, {
      items: [{ text: "short" }, { text: long }, { text: exact }, { text: long + " more" }],
    });
    assert.equal(mixed.headers.get("x-truncated-items"), "2");
    const none = await postJson(url, { items: [{ text: exact }] });
    assert.equal(none.headers.get("x-truncated-items"), "0");
    // Token ids too (OpenAI route): 200 ids for 126 places.
    const ids = await postJson(`${w.url}/v1/embeddings`, {
      model: "fixture/dense",
      input: [Array(200).fill(5), [5, 6, 7]],
    });
    assert.equal(ids.status, 200, JSON.stringify(ids.body));
    assert.equal(ids.headers.get("x-truncated-items"), "1");
  });
});

Deno.test("encode: model names raw and percent-encoded; unknown model 404", async () => {
  // Request validation happens before any model runs: the fake backend serves.
  await withFakeBackendWorker(async (w) => {
    for (const name of ["fixture/dense", "fixture%2Fdense", "fixture%2fdense"]) {
      const r = await postJson(`${w.url}/v1/encode/${name}`, { items: [{ text: "x" }] });
      assert.equal(r.status, 200, name);
    }
    const nf = await postJson(`${w.url}/v1/encode/nope/nothing`, { items: [{ text: "x" }] });
    assert.equal(nf.status, 404);
    assert.equal(nf.body.detail.code, "MODEL_NOT_FOUND");
  });
});

Deno.test("encode sparse: SPLADE non-zeros match, int32 indices on the wire", async () => {
  await withWorker(async (w) => {
    const texts = ["the cat sat", "hello world again"];
    const r = await postJson(`${w.url}/v1/encode/fixture/sparse`, {
      items: texts.map((text) => ({ text })),
      params: { output_types: ["sparse"] },
    });
    assert.equal(r.status, 200);
    const want = await expectedSparse(texts);
    assert.equal(r.body.items.length, texts.length, "one result per item");
    r.body.items.forEach((item: Json, i: number) => {
      const sp = item.sparse;
      assert.equal(sp.indices.length, want[i].size);
      assert.ok(sp.values.every((v: number) => v > 0));
      sp.indices.forEach((idx: number, k: number) => {
        assert.ok(Math.abs(sp.values[k] - want[i].get(idx)!) < 1e-4);
      });
      assert.deepEqual([...sp.indices], [...sp.indices].sort((a, b) => a - b));
    });
    // Same request in msgpack: indices are `<i4`.
    const res = await fetch(`${w.url}/v1/encode/fixture/sparse`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        items: [{ text: "the cat sat" }],
        params: { output_types: ["sparse"] },
      }),
    });
    const body = decodeMsgpackView(new Uint8Array(await res.arrayBuffer()));
    assert.equal(body.items[0].sparse.indices.type, "<i4");
    // int8 is ignored for sparse values (stay float32).
    const q = await postJson(`${w.url}/v1/encode/fixture/sparse`, {
      items: [{ text: "the cat sat" }],
      params: { output_types: ["sparse"], output_dtype: "int8" },
    });
    assert.equal(q.body.items[0].sparse.dtype, "float32");
  });
});

Deno.test("encode multivector: ColBERT query padding to 32, documents drop punctuation", async () => {
  await withWorker(async (w) => {
    const url = `${w.url}/v1/encode/fixture/colbert`;
    const q = await postJson(url, {
      items: [{ text: "cats and dogs" }],
      params: { output_types: ["multivector"], options: { input_type: "query" } },
    });
    assert.equal(q.status, 200);
    const qm = q.body.items[0].multivector;
    assert.equal(qm.num_tokens, 32);
    assert.equal(qm.values.length, 32);
    assert.equal(qm.values[0].length, qm.token_dims);
    for (const row of qm.values) assert.ok(Math.abs(Math.hypot(...row) - 1) < 1e-4);

    const plain = await postJson(url, {
      items: [{ text: "cats and dogs" }],
      params: { output_types: ["multivector"] },
    });
    const punct = await postJson(url, {
      items: [{ text: "cats, and dogs!" }],
      params: { output_types: ["multivector"] },
    });
    const a = plain.body.items[0].multivector;
    const b = punct.body.items[0].multivector;
    // [CLS] [unused1] body [SEP]: punctuation tokens are dropped from documents.
    assert.equal(a.num_tokens, fixtureIds("cats and dogs").length + 1);
    assert.equal(b.num_tokens, a.num_tokens);
  });
});

Deno.test("encode static family: table lookup + mean in the graph, L2 here", async () => {
  await withWorker(async (w) => {
    const texts = ["the cat sat on the mat", "hello world"];
    const r = await postJson(`${w.url}/v1/encode/fixture/static`, {
      items: texts.map((text) => ({ text })),
    });
    assert.equal(r.status, 200);
    const want = await expectedDense("static", texts);
    assert.equal(r.body.items.length, texts.length, "one result per item");
    r.body.items.forEach((item: Json, i: number) => {
      assert.equal(item.dense.dims, 48);
      assert.ok(maxDiff(item.dense.values, want[i]) < 1e-4);
    });
  });
});
