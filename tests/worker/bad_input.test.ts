/**
 * Bad input, full queues, wrong models and operations: the answers of the HTTP surface. The
 * models run on a fake backend (tests/worker/fake_backend.ts): none of this depends on outputs.
 */
import assert from "node:assert/strict";
import { postJson, startFakeBackendWorker } from "./harness.ts";
import { scrape, sum } from "../observability/helpers/prom_text.ts";
import { deferred } from "./fake_backend.ts";
import { waitFor } from "../helpers/wait.ts";

async function post(url: string, body: BodyInit, contentType: string) {
  const res = await fetch(url, { method: "POST", headers: { "content-type": contentType }, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) };
}

Deno.test("bad input gets 400 INVALID_INPUT with a useful message; the worker keeps serving", async () => {
  const w = await startFakeBackendWorker({ SVC_MAX_ITEMS: "8", SVC_MAX_BODY_BYTES: "65536" });
  const url = `${w.url}/v1/encode/fixture/dense`;
  try {
    const cases: [string, BodyInit, string, RegExp][] = [
      ["malformed JSON", "{items: [", "application/json", /JSON/i],
      ["wrong type", JSON.stringify({ items: "nope" }), "application/json", /items/],
      ["missing items", JSON.stringify({ params: {} }), "application/json", /items/],
      ["empty items", JSON.stringify({ items: [] }), "application/json", /items/],
      [
        "too many items",
        JSON.stringify({ items: Array.from({ length: 9 }, () => ({ text: "a" })) }),
        "application/json",
        /items|8/,
      ],
      [
        "item without text",
        JSON.stringify({ items: [{ id: "x" }] }),
        "application/json",
        /text/,
      ],
      [
        "unknown output type",
        JSON.stringify({ items: [{ text: "a" }], params: { output_types: ["colour"] } }),
        "application/json",
        /output_types|colour/,
      ],
      [
        "output type the model lacks",
        JSON.stringify({ items: [{ text: "a" }], params: { output_types: ["sparse"] } }),
        "application/json",
        /sparse/,
      ],
      [
        "unknown profile",
        JSON.stringify({ items: [{ text: "a" }], params: { options: { profile: "huge" } } }),
        "application/json",
        /profile/,
      ],
      [
        "lora id that is a path",
        JSON.stringify({ items: [{ text: "a" }], params: { options: { lora_id: "../../etc" } } }),
        "application/json",
        /lora_id/,
      ],
      ["body over the limit", "x".repeat(70_000), "application/json", /limit/],
      [
        "deep JSON",
        "[".repeat(30_000) + "]".repeat(30_000),
        "application/json",
        /deep|depth|nest/i,
      ],
      // msgpack array32 header declaring 4 billion elements in a 5-byte body.
      [
        "msgpack bomb",
        new Uint8Array([0xdd, 0xff, 0xff, 0xff, 0xff]),
        "application/msgpack",
        /cannot fit/,
      ],
      [
        "truncated msgpack",
        new Uint8Array([0x81, 0xa5, 0x69]),
        "application/msgpack",
        /only 2 remain/,
      ],
      ["deep msgpack", new Uint8Array(60_000).fill(0x91), "application/msgpack", /nesting/],
    ];
    for (const [name, body, ct, re] of cases) {
      const r = await post(url, body, ct);
      assert.equal(r.status, 400, `${name}: status ${r.status} ${JSON.stringify(r.body)}`);
      assert.equal(r.body.detail.code, "INVALID_INPUT", name);
      assert.match(r.body.detail.message, re, name);
    }
    const ok = await postJson(url, { items: [{ text: "still alive" }] });
    assert.equal(ok.status, 200);
    assert.deepEqual(w.backend.runners.get("fixture/dense")?.batches.at(-1), [
      { text: "still alive" },
    ]);
    const unknownRoute = await fetch(`${w.url}/v2/nothing`);
    assert.equal(unknownRoute.status, 404);
    assert.ok((await unknownRoute.json()).detail.code);
  } finally {
    await w.close();
  }
});

Deno.test("a full queue answers 503 QUEUE_FULL with Retry-After at once", async () => {
  const w = await startFakeBackendWorker({
    SVC_MAX_QUEUE_ITEMS: "4",
    SVC_PRELOAD_MODELS: "fixture/dense",
  });
  try {
    // The first batch stays on the (fake) thread until some request has found the queue full.
    const running = deferred();
    w.backend.hold = running;
    let refused = 0;
    const long = Array.from({ length: 100 }, (_, i) => `w${i}`).join(" ");
    const answers = Promise.all(
      Array.from({ length: 40 }, () =>
        postJson(`${w.url}/v1/encode/fixture/dense`, {
          items: [{ text: long }, { text: long }, { text: long }],
        }).then((r) => {
          if (r.status === 503) refused++;
          return r;
        })),
    );
    await waitFor(() => refused > 0, "a request refused while a batch runs");
    running.resolve();
    const rs = await answers;
    const full = rs.filter((r) => r.status === 503);
    assert.ok(full.length > 0, "some requests found the queue full");
    assert.ok(rs.some((r) => r.status === 200));
    for (const r of full) {
      assert.equal(r.body.detail.code, "QUEUE_FULL");
      assert.ok(Number(r.headers.get("retry-after")) >= 1);
    }
    assert.ok(rs.every((r) => r.status === 200 || r.status === 503));
  } finally {
    await w.close();
  }
});

Deno.test("a request larger than the whole queue is a 400 naming SVC_MAX_QUEUE_ITEMS, before any load", async () => {
  const w = await startFakeBackendWorker({ SVC_MAX_QUEUE_ITEMS: "4" });
  try {
    const five = Array.from({ length: 5 }, (_, i) => ({ text: `t${i}` }));
    const r = await postJson(`${w.url}/v1/encode/fixture/dense`, { items: five });
    assert.equal(r.status, 400);
    assert.equal(r.body.detail.code, "INVALID_INPUT");
    assert.match(r.body.detail.message, /needs 5 work items .* at most 4 \(SVC_MAX_QUEUE_ITEMS\)/);
    assert.equal(r.headers.get("retry-after"), null);
    const info = await (await fetch(`${w.url}/v1/models/fixture%2Fdense`)).json();
    assert.equal(info.state, "available", "no load was started for it");
    // Score expands to one work item per (query, item) pair: the same bound applies.
    const s = await postJson(`${w.url}/v1/score/fixture/reranker`, {
      query: { text: "q" },
      items: five,
    });
    assert.equal(s.status, 400);
    assert.match(s.body.detail.message, /SVC_MAX_QUEUE_ITEMS/);
    const ok = await postJson(`${w.url}/v1/encode/fixture/dense`, { items: five.slice(1) });
    assert.equal(ok.status, 200, "exactly the queue's size is served");
  } finally {
    await w.close();
  }
});

Deno.test("operation and family mismatches are clear 400s", async () => {
  const w = await startFakeBackendWorker();
  try {
    const wrongOp = await postJson(`${w.url}/v1/encode/fixture/reranker`, {
      items: [{ text: "a" }],
    });
    assert.equal(wrongOp.status, 400);
    assert.match(wrongOp.body.detail.message, /\/v1\/score/);
    const encodeModel = await postJson(`${w.url}/v1/extract/fixture/clip`, {
      items: [{ text: "a" }],
    });
    assert.equal(encodeModel.status, 400);
    assert.match(encodeModel.body.detail.message, /clip model: use \/v1\/encode\//);
  } finally {
    await w.close();
  }
});

Deno.test("a model of another bundle gets 409 DEPENDENCY_CONFLICT", async () => {
  const w = await startFakeBackendWorker({ SVC_BUNDLE: "extract" });
  try {
    const r = await postJson(`${w.url}/v1/encode/fixture/dense`, { items: [{ text: "a" }] });
    assert.equal(r.status, 409);
    assert.equal(r.body.detail.code, "DEPENDENCY_CONFLICT");
    assert.match(r.body.detail.message, /bundle/);
  } finally {
    await w.close();
  }
});

Deno.test("unknown model names never become metric label values", async () => {
  const w = await startFakeBackendWorker();
  try {
    for (let i = 0; i < 5; i++) {
      const r = await postJson(`${w.url}/v1/encode/nope/made-up-${i}`, { items: [{ text: "a" }] });
      assert.equal(r.status, 404);
    }
    const samples = await scrape(w.url);
    assert.ok(!samples.some((s) => s.labels.model?.startsWith("nope/")), "no per-name series");
    assert.equal(sum(samples, "svc_requests_total", { model: "unknown", status: "404" }), 5);
  } finally {
    await w.close();
  }
});
