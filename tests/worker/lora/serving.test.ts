/**
 * LoRA adapters served end to end: a worker over the fixture models, adapters for fixture/dense
 * built deterministically and served by the fake hub, requests over HTTP. Vectors are checked
 * against a plain-TypeScript encoder run with the merged weights.
 */
import assert from "node:assert/strict";
import { dense } from "@svc/fixture-models/models";
import type { EncoderWeights } from "@svc/fixture-models/models";
import {
  type AdapterSpec,
  DENSE_QV_SPEC,
  denseAdapter,
  type LoraFixture,
  mergedWeights,
  writeAdapter,
} from "@svc/fixture-models/lora";
import { maxDiff, referenceDense } from "../../fixtures/lora/reference.ts";
import { type FakeHub, startFakeHub } from "../../fake_hub/server.ts";
import { type Json, postJson, startTestWorker, type TestWorker } from "../harness.ts";
import { waitFor } from "../../helpers/wait.ts";
import { ensureFixtures } from "@svc/fixture-models";
import { StatusMessageSchema } from "@svc/shared/schemas/status";

const W = dense.weights() as EncoderWeights;
const TEXTS = ["hello world", "the cat sat on the warm mat", "red apples and green pears"];
const TOKEN = "hf_loraGatedToken42";

const SPEC = DENSE_QV_SPEC;
const ADAPTERS: Record<string, LoraFixture> = Object.fromEntries(
  ([
    SPEC,
    {
      ...SPEC,
      repo: "fixture-lora/dense-ffn",
      modules: ["output.dense"],
      targetModules: undefined,
    },
    {
      ...SPEC,
      repo: "fixture-lora/dense-k",
      modules: ["attention.self.key"],
      targetModules: undefined,
      rank: 2,
      alpha: 4,
    },
    { ...SPEC, repo: "fixture-lora/dense-bf16", dtype: "BF16" },
    { ...SPEC, repo: "fixture-lora/wrong-hidden", hiddenOverride: 48 },
    {
      ...SPEC,
      repo: "fixture-lora/unknown-module",
      extraModule: "encoder.layer.0.attention.self.rotary",
      targetModules: undefined,
    },
    { ...SPEC, repo: "fixture-lora/gated" },
    { ...SPEC, repo: "fixture-lora/nan-weight", nonFinite: NaN },
    { ...SPEC, repo: "fixture-lora/inf-weight", nonFinite: Infinity },
    { ...SPEC, repo: "fixture-lora/huge-alpha", alpha: 1e300 },
  ] satisfies AdapterSpec[]).map((s) => [s.repo, denseAdapter(W, s)]),
);
const QV = SPEC.repo;
const FFN = "fixture-lora/dense-ffn";
const KEY = "fixture-lora/dense-k";
const BF16 = "fixture-lora/dense-bf16";

/** A fake hub serving every fixture adapter, and a worker loading models from the cluster cache. */
async function setup(
  env: Record<string, string> = {},
): Promise<{ hub: FakeHub; w: TestWorker; close(): Promise<void> }> {
  const root = await Deno.makeTempDir({ prefix: "svc-lora-hub-" });
  for (const lora of Object.values(ADAPTERS)) await writeAdapter(root, lora);
  const hub = await startFakeHub({ root, gated: { "fixture-lora/gated": TOKEN } });
  try {
    const w = await startTestWorker({ SVC_HUB_DISABLED: "0", SVC_HUB_URL: hub.url, ...env });
    return {
      hub,
      w,
      async close() {
        // The worker first: it aborts adapter fetches the hub may be stalling.
        await w.close();
        await hub.close();
        await Deno.remove(root, { recursive: true });
      },
    };
  } catch (err) {
    await hub.close();
    await Deno.remove(root, { recursive: true });
    throw err;
  }
}

function encode(w: TestWorker, texts: string[], lora?: string, model = "fixture/dense") {
  return postJson(`${w.url}/v1/encode/${model}`, {
    items: texts.map((text) => ({ text })),
    params: lora === undefined ? {} : { options: { lora_id: lora } },
  });
}

/** Encode with the adapter, asking again while it loads (as a client honouring Retry-After). */
async function encodeLoaded(w: TestWorker, texts: string[], lora: string) {
  let r = await encode(w, texts, lora);
  await waitFor(
    async () => {
      if (r.status !== 503 || r.body.detail.code !== "LORA_LOADING") return true;
      r = await encode(w, texts, lora);
      return false;
    },
    `adapter ${lora} to load`,
    30_000,
  );
  return r;
}

function vectors(body: Json): Float32Array[] {
  return body.items.map((it: Json) => Float32Array.from(it.dense.values));
}

function assertClose(got: Float32Array[], want: Float32Array[], what: string): void {
  assert.equal(got.length, want.length);
  got.forEach((v, i) =>
    assert.ok(maxDiff(v, want[i]) < 1e-4, `${what} ${i}: ${maxDiff(v, want[i])}`)
  );
}

const adapted = (id: string, texts = TEXTS) =>
  referenceDense(mergedWeights(W, ADAPTERS[id]), texts);

function hubFetches(hub: FakeHub, repo: string, file = "adapter_model.safetensors"): number {
  return hub.requests.filter((r) =>
    r.method === "GET" && r.path.startsWith(`/${repo}/resolve/`) && r.path.endsWith(file) &&
    r.range === undefined
  ).length;
}

function events(w: TestWorker, event: string, lora?: string): Json[] {
  return w.logs.map((l) => JSON.parse(l)).filter((o) =>
    o.msg === event && (lora === undefined || o.lora === lora)
  );
}

Deno.test("lora: adapted vectors equal the merged-weights reference; base vectors unchanged; mixed concurrent requests", async () => {
  const s = await setup();
  try {
    const base = referenceDense(W, TEXTS);
    const before = await encode(s.w, TEXTS);
    assert.equal(before.status, 200);
    assertClose(vectors(before.body), base, "base");

    for (const id of [QV, FFN, BF16]) {
      const r = await encodeLoaded(s.w, TEXTS, id);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assertClose(vectors(r.body), adapted(id), id);
      vectors(r.body).forEach((v, i) => assert.ok(maxDiff(v, base[i]) > 1e-2, `${id} changes`));
    }
    // The base model's own session never saw an adapter.
    assertClose(vectors((await encode(s.w, TEXTS)).body), base, "base after adapters");

    // Requests with and without adapters at the same time: batches never mix them.
    const asks = Array.from({ length: 12 }, (_, i) => {
      const lora = [undefined, QV, FFN, BF16][i % 4];
      const texts = [TEXTS[i % 3], TEXTS[(i + 1) % 3]];
      return { lora, texts };
    });
    const answers = await Promise.all(asks.map((a) => encode(s.w, a.texts, a.lora)));
    answers.forEach((r, i) => {
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const { lora, texts } = asks[i];
      const want = lora === undefined ? referenceDense(W, texts) : adapted(lora, texts);
      assertClose(vectors(r.body), want, `concurrent ${i} (${lora ?? "base"})`);
    });

    // Score on an encode model takes the adapter too.
    const sc = await postJson(`${s.w.url}/v1/score/fixture/dense`, {
      query: { text: TEXTS[0] },
      items: [{ text: TEXTS[1] }, { text: TEXTS[2] }],
      options: { lora_id: QV },
    });
    assert.equal(sc.status, 200, JSON.stringify(sc.body));

    // The model lists its adapters and counts their memory.
    const info = (await (await fetch(`${s.w.url}/v1/models/fixture/dense`)).json()) as Json;
    assert.deepEqual(info.loras.map((l: Json) => l.id).sort(), [BF16, FFN, QV].sort());
    for (const l of info.loras) {
      assert.equal(l.state, "loaded");
      assert.ok(l.memory_bytes > 0);
    }
    // The status stream too, with the adapters' sessions in the model's memory.
    const msg = StatusMessageSchema.parse(await s.w.instance.status.snapshot());
    const model = msg.models.find((m) => m.name === "fixture/dense")!;
    assert.deepEqual(model.loras, info.loras);
    const sessions = info.loras.reduce((t: number, l: Json) => t + l.memory_bytes, 0);
    const modelFile =
      (await Deno.stat(`${await ensureFixtures()}/cache/fixture/dense/onnx/model.onnx`))
        .size;
    assert.ok(model.memory_bytes >= modelFile + sessions, "the model's memory counts its adapters");

    // Metrics label adapters that loaded; the base model's series are unchanged.
    const metrics = await (await fetch(`${s.w.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`svc_lora_requests_total\\{[^}]*lora="${QV}"[^}]*\\} \\d`));
    for (const l of events(s.w, "lora_loaded")) {
      console.log(
        `lora ${l.lora}: fetch ${l.fetch_ms} ms, plan ${l.plan_ms} ms, merge ${l.merge_ms} ms, ` +
          `session ${l.session_ms} ms, ${l.memory_bytes} bytes`,
      );
    }
  } finally {
    await s.close();
  }
});

Deno.test("lora: 503 LORA_LOADING with Retry-After while the adapter's fetch is slow; base requests go on", async () => {
  const s = await setup({ SVC_LORA_WAIT_MS: "0" });
  try {
    assert.equal((await encode(s.w, TEXTS)).status, 200, "model loaded");
    s.hub.fault(`${QV}/resolve/main/adapter_model.safetensors`, "stall-headers");
    const first = await encode(s.w, TEXTS, QV);
    assert.equal(first.status, 503, JSON.stringify(first.body));
    assert.equal(first.body.detail.code, "LORA_LOADING");
    assert.equal(first.headers.get("retry-after"), "2");
    await waitFor(() => hubFetches(s.hub, QV) === 1, "the stalled adapter fetch");
    // The base model answers at once while the adapter's fetch hangs, with base vectors.
    const base = await encode(s.w, TEXTS);
    assert.equal(base.status, 200);
    assertClose(vectors(base.body), referenceDense(W, TEXTS), "base during adapter load");
    // Asking again joins the same load: no second fetch.
    const again = await encode(s.w, TEXTS, QV);
    assert.equal(again.body.detail.code, "LORA_LOADING");
    assert.equal(hubFetches(s.hub, QV), 1);
    const info = (await (await fetch(`${s.w.url}/v1/models/fixture/dense`)).json()) as Json;
    assert.deepEqual(info.loras, [{ id: QV, state: "loading", memory_bytes: 0 }]);
  } finally {
    await s.close();
  }
});

Deno.test("lora: beyond SVC_MAX_LORAS_PER_MODEL the least recently used adapter is evicted and reloads on demand", async () => {
  const s = await setup({ SVC_MAX_LORAS_PER_MODEL: "2" });
  try {
    for (const id of [QV, FFN]) assert.equal((await encodeLoaded(s.w, TEXTS, id)).status, 200);
    // QV used last: FFN is the least recently used when KEY arrives.
    assert.equal((await encode(s.w, TEXTS, QV)).status, 200);
    const k = await encodeLoaded(s.w, TEXTS, KEY);
    assert.equal(k.status, 200, JSON.stringify(k.body));
    assertClose(vectors(k.body), adapted(KEY), KEY);
    assert.deepEqual(events(s.w, "lora_evicted").map((e) => e.lora), [FFN]);
    const info = (await (await fetch(`${s.w.url}/v1/models/fixture/dense`)).json()) as Json;
    assert.deepEqual(info.loras.map((l: Json) => l.id).sort(), [KEY, QV].sort());

    const again = await encodeLoaded(s.w, TEXTS, FFN);
    assert.equal(again.status, 200);
    assertClose(vectors(again.body), adapted(FFN), `${FFN} reloaded`);
    assert.equal(events(s.w, "lora_loaded", FFN).length, 2, "loaded twice");
    assert.equal(hubFetches(s.hub, FFN), 1, "the reload reads the local cache");
    assert.deepEqual(events(s.w, "lora_evicted").map((e) => e.lora), [FFN, QV]);
  } finally {
    await s.close();
  }
});

Deno.test("lora: mismatched adapters are a fast 400 naming module and shape, remembered for the cool-down", async () => {
  const cache = await Deno.makeTempDir({ prefix: "svc-lora-refused-" });
  const s = await setup({ SVC_LORA_WAIT_MS: "20000", SVC_CACHE_DIR: cache });
  try {
    assert.equal((await encode(s.w, TEXTS)).status, 200, "model loaded");
    const cases: [string, RegExp][] = [
      [
        "fixture-lora/wrong-hidden",
        /does not fit model 'fixture\/dense': module encoder\.layer\.0\.attention\.self\.query: lora_A is \[4,48\] \(48 inputs\) but the base layer takes 32 inputs/,
      ],
      [
        "fixture-lora/unknown-module",
        /unknown target module encoder\.layer\.0\.attention\.self\.rotary: no MatMul\/Gemm weight/,
      ],
    ];
    for (const [id, message] of cases) {
      const r = await encode(s.w, TEXTS, id);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.detail.code, "INVALID_INPUT");
      assert.match(r.body.detail.message, message);
      const [failed] = events(s.w, "lora_load_failed", id);
      console.log(`${id}: refused ${failed.load_ms} ms after the request (fetch included)`);
      assert.ok(failed.load_ms < 5000, `refused in ${failed.load_ms} ms`);
      const fetched = hubFetches(s.hub, id);
      const retry = await encode(s.w, TEXTS, id);
      assert.equal(retry.status, 400);
      assert.equal(retry.body.detail.message, r.body.detail.message);
      assert.equal(hubFetches(s.hub, id), fetched, "a retry inside the cool-down fetches nothing");
      assert.equal(events(s.w, "lora_load_failed", id).length, 1);
      // A refused adapter's files do not stay in the cache (any client can name one).
      const cached = `${cache}/${id}/@main/adapter_model.safetensors`;
      await waitFor(() => Deno.stat(cached).then(() => false, () => true), `${id} dropped`);
    }

    const missing = await encode(s.w, TEXTS, "fixture-lora/does-not-exist");
    assert.equal(missing.status, 400);
    // Without a token the hub answers 401 for a missing repository too: the message says both.
    assert.match(
      missing.body.detail.message,
      /LoRA adapter 'fixture-lora\/does-not-exist' cannot be fetched: .*does not exist.*HF_TOKEN/,
    );

    const gated = await encode(s.w, TEXTS, "fixture-lora/gated");
    assert.equal(gated.status, 400);
    assert.match(gated.body.detail.message, /fixture-lora\/gated.*HF_TOKEN/);

    // The model itself is untouched by the failures.
    assertClose(vectors((await encode(s.w, TEXTS)).body), referenceDense(W, TEXTS), "base");
  } finally {
    await s.close();
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("lora: adapters whose merged weights are not finite are a 400 naming the adapter, never vectors of null", async () => {
  const s = await setup();
  try {
    assert.equal((await encode(s.w, TEXTS)).status, 200, "model loaded");
    for (const id of ["fixture-lora/nan-weight", "fixture-lora/inf-weight"]) {
      // Before: 200 with every vector `null` (NaN as JSON).
      const r = await encode(s.w, TEXTS, id);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.detail.code, "INVALID_INPUT");
      assert.match(
        r.body.detail.message,
        new RegExp(
          `LoRA adapter '${id}' does not fit model 'fixture/dense': module ` +
            `encoder\\.layer\\.0\\.attention\\.self\\.query: merged into graph weight .* ` +
            `gives non-finite values`,
        ),
      );
    }
    const huge = await encode(s.w, TEXTS, "fixture-lora/huge-alpha");
    assert.equal(huge.status, 400, JSON.stringify(huge.body));
    assert.match(huge.body.detail.message, /LoRA adapter 'fixture-lora\/huge-alpha'/);
    assert.match(huge.body.detail.message, /the scale \(lora_alpha \/ r = 2\.5e\+299\)/);
    // The base model is untouched.
    assert.equal((await encode(s.w, TEXTS)).status, 200);
  } finally {
    await s.close();
  }
});

Deno.test("lora: ids that are URLs, paths or not repository ids are a 400 before any fetch", async () => {
  const s = await setup();
  try {
    const bad: unknown[] = [
      "https://huggingface.co/org/name",
      "hf://org/name",
      "/etc/passwd",
      "../org/name",
      "org/../name",
      "org/name/extra",
      "org\\name",
      "~/adapters/x",
      "org/na\nme",
      "org/\u0000name",
      "name-only",
      "",
      `org/${"x".repeat(300)}`,
      42,
      { repo: "org/name" },
    ];
    for (const lora_id of bad) {
      const r = await postJson(`${s.w.url}/v1/encode/fixture/dense`, {
        items: [{ text: "hi" }],
        params: { options: { lora_id } },
      });
      assert.equal(r.status, 400, `${JSON.stringify(lora_id)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.detail.code, "INVALID_INPUT");
      assert.match(r.body.detail.message, /options\.lora_id/);
    }
    // Models of families without adapters refuse them by name.
    const reranker = await postJson(`${s.w.url}/v1/score/fixture/reranker`, {
      query: { text: "q" },
      items: [{ text: "d" }],
      options: { lora_id: QV },
    });
    assert.equal(reranker.status, 400);
    assert.match(reranker.body.detail.message, /does not support LoRA adapters/);
    assert.equal(s.hub.requests.length, 0, "nothing was fetched");
  } finally {
    await s.close();
  }
});

Deno.test("lora: an adapter over SVC_MAX_LORA_BYTES is a 400 before its weights are downloaded", async () => {
  const weights = ADAPTERS[QV].files.find((f) => f.path === "adapter_model.safetensors")!;
  const bound = weights.bytes.length - 1;
  const s = await setup({ SVC_MAX_LORA_BYTES: String(bound) });
  try {
    const r = await encodeLoaded(s.w, TEXTS, QV);
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.detail.code, "INVALID_INPUT");
    assert.match(
      r.body.detail.message,
      new RegExp(
        `is ${weights.bytes.length} bytes, more than the ${bound} allowed \\(SVC_MAX_LORA`,
      ),
    );
    // The hub's probe stated the size; the file itself was never asked for.
    assert.equal(hubFetches(s.hub, QV), 0, "the adapter's weights were not downloaded");
    const base = await encode(s.w, TEXTS);
    assert.equal(base.status, 200, JSON.stringify(base.body));
  } finally {
    await s.close();
  }
});
