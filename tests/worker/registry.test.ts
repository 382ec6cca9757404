/**
 * The model registry behind a real worker: weights through the fake hub, load failures, waits,
 * profiles, filters, preload and eviction. Tests of what HTTP answers (filters, profiles, preload,
 * shared loads, gated repositories) run on the fake backend; loads and eviction run ONNX.
 */
import assert from "node:assert/strict";
import { ensureFixtures } from "@svc/fixture-models";
import { startFakeHub } from "../fake_hub/server.ts";
import { postJson, startFakeBackendWorker, startTestWorker } from "./harness.ts";
import { waitFor } from "../helpers/wait.ts";

const ENCODE = (url: string, model = "fixture/dense") =>
  postJson(`${url}/v1/encode/${model}`, { items: [{ text: "hello" }] });

function events(logs: string[], event: string, model: string): number {
  return logs.filter((l) => {
    const o = JSON.parse(l);
    return o.msg === event && o.model === model;
  }).length;
}

Deno.test("weights through the fake hub; a second worker on the same cache never calls it", async () => {
  const fx = await ensureFixtures();
  const hub = await startFakeHub({ root: `${fx}/cache` });
  const cacheDir = await Deno.makeTempDir();
  try {
    const env = {
      SVC_CLUSTER_CACHE: "",
      SVC_HUB_DISABLED: "0",
      SVC_HUB_URL: hub.url,
      SVC_CACHE_DIR: cacheDir,
    };
    const a = await startTestWorker(env);
    try {
      assert.equal((await ENCODE(a.url)).status, 200);
    } finally {
      await a.close();
    }
    const fetched = hub.requests.filter((r) => r.path.includes("/resolve/")).length;
    assert.ok(fetched > 0, "the first load came from the hub");
    const b = await startTestWorker(env);
    try {
      assert.equal((await ENCODE(b.url)).status, 200);
    } finally {
      await b.close();
    }
    assert.equal(hub.requests.filter((r) => r.path.includes("/resolve/")).length, fetched);
  } finally {
    await hub.close();
    await Deno.remove(cacheDir, { recursive: true });
  }
});

Deno.test("gated repo: clear error naming model and HF_TOKEN, remembered as last_error; token fixes it", async () => {
  const fx = await ensureFixtures();
  const token = "hf_gatedSecretValue123";
  const hub = await startFakeHub({ root: `${fx}/cache`, gated: { "fixture/dense": token } });
  const base = { SVC_CLUSTER_CACHE: "", SVC_HUB_DISABLED: "0", SVC_HUB_URL: hub.url };
  try {
    const w = await startFakeBackendWorker(base);
    try {
      const r = await ENCODE(w.url);
      assert.equal(r.status, 502);
      assert.equal(r.headers.get("retry-after"), null);
      const { code, message, error_class, attempts, permanent } = r.body.detail;
      assert.deepEqual({ code, error_class, attempts, permanent }, {
        code: "MODEL_LOAD_FAILED",
        error_class: "gated",
        attempts: 1,
        permanent: true,
      });
      assert.match(message, /fixture\/dense/);
      assert.match(message, /HF_TOKEN/);
      const info = await (await fetch(`${w.url}/v1/models/fixture/dense`)).json();
      assert.equal(info.state, "failed");
      assert.equal(info.last_error.code, "MODEL_LOAD_FAILED", "the code the client got");
      assert.match(info.last_error.message, /HF_TOKEN/);
    } finally {
      await w.close();
    }
    const ok = await startFakeBackendWorker({ ...base, HF_TOKEN: token });
    try {
      assert.equal((await ENCODE(ok.url)).status, 200);
      assert.ok(!ok.logs.join("\n").includes(token), "the token never reaches the logs");
    } finally {
      await ok.close();
    }
  } finally {
    await hub.close();
  }
});

Deno.test("a hub failure: 502 MODEL_LOAD_FAILED at once (transient), the next request after the cool-down loads", async () => {
  const fx = await ensureFixtures();
  const hub = await startFakeHub({ root: `${fx}/cache` });
  const w = await startTestWorker({
    SVC_CLUSTER_CACHE: "",
    SVC_HUB_DISABLED: "0",
    SVC_HUB_URL: hub.url,
    // Long enough to hold the second request even on a loaded machine.
    SVC_LOAD_FAILURE_COOLDOWN_MS: "2000",
  });
  try {
    hub.fault("onnx/model.onnx", "error", 100);
    const r = await ENCODE(w.url);
    assert.equal(r.status, 502);
    assert.equal(r.headers.get("retry-after"), null);
    assert.equal(r.body.detail.code, "MODEL_LOAD_FAILED");
    assert.equal(r.body.detail.error_class, "hub_unreachable");
    assert.equal(r.body.detail.permanent, false);
    const downloads = () => hub.requests.filter((q) => q.path.endsWith("/onnx/model.onnx")).length;
    const tried = downloads();
    // Within the cool-down: the same answer, no new download.
    const again = await ENCODE(w.url);
    assert.equal(again.status, 502);
    assert.deepEqual(again.body, r.body);
    assert.equal(downloads(), tried);
    // Until the cool-down ends every answer is that one, without a download; the first request
    // after it loads (the fault was one-shot).
    let loaded = false;
    await waitFor(
      async () => {
        const next = await ENCODE(w.url);
        if (next.status === 200) return loaded = true;
        assert.deepEqual(next.body, r.body);
        assert.equal(downloads(), tried);
        return false;
      },
      "a load after the cool-down",
      { everyMs: 100 },
    );
    assert.ok(loaded, "the fault was one-shot: the retry loads");
    const info = await (await fetch(`${w.url}/v1/models/fixture/dense`)).json();
    assert.equal(info.state, "loaded");
    assert.equal(info.last_error, null);
  } finally {
    await w.close();
    await hub.close();
  }
});

Deno.test("concurrent first requests share one load; GET model info never loads", async () => {
  const w = await startFakeBackendWorker();
  try {
    const info = await (await fetch(`${w.url}/v1/models/fixture%2Fsparse`)).json();
    assert.equal(info.state, "available");
    assert.equal(info.loaded, false);
    assert.equal(events(w.logs, "model_loading", "fixture/sparse"), 0);

    const rs = await Promise.all(Array.from({ length: 10 }, () => ENCODE(w.url)));
    for (const r of rs) assert.equal(r.status, 200);
    assert.equal(events(w.logs, "model_loading", "fixture/dense"), 1);
    assert.equal(events(w.logs, "model_loaded", "fixture/dense"), 1);
    const after = await (await fetch(`${w.url}/v1/models/fixture/dense`)).json();
    assert.equal(after.loaded, true);
    assert.equal(after.state, "loaded");
  } finally {
    await w.close();
  }
});

Deno.test("a request that outwaits SVC_LOAD_WAIT_MS gets 503 MODEL_LOADING + Retry-After: 5", async () => {
  const w = await startTestWorker({ SVC_LOAD_WAIT_MS: "0" });
  try {
    const first = await ENCODE(w.url);
    assert.equal(first.status, 503);
    assert.equal(first.body.detail.code, "MODEL_LOADING");
    assert.equal(first.headers.get("retry-after"), "5");
    // The load went on in the background: soon the same request succeeds.
    await waitFor(
      async () => (await (await fetch(`${w.url}/v1/models/fixture/dense`)).json()).loaded,
      "the background load",
    );
    assert.equal((await ENCODE(w.url)).status, 200);
  } finally {
    await w.close();
  }
});

Deno.test("GET /v1/models/{id:profile} reports that profile's dims, as its encode answers them", async () => {
  const w = await startTestWorker();
  try {
    const small = await (await fetch(`${w.url}/v1/models/fixture%2Fdense%3Asmall`)).json();
    assert.equal(small.name, "fixture/dense:small");
    const plain = await (await fetch(`${w.url}/v1/models/fixture%2Fdense`)).json();
    for (const [info, name] of [[small, "fixture/dense:small"], [plain, "fixture/dense"]]) {
      const r = await ENCODE(w.url, encodeURIComponent(name));
      assert.equal(r.status, 200);
      assert.deepEqual(info.dims, { dense: r.body.items[0].dense.dims }, name);
    }
    assert.deepEqual([small.dims.dense, plain.dims.dense], [16, 32]);
  } finally {
    await w.close();
  }
});

Deno.test("an unknown profile is a 400 naming the model's profiles, as a name or an option; an unknown model 404", async () => {
  const w = await startFakeBackendWorker();
  try {
    const byName = await ENCODE(w.url, "fixture%2Fdense%3Atiny");
    const info = await fetch(`${w.url}/v1/models/fixture%2Fdense%3Atiny`);
    const infoBody = await info.json();
    const byOption = await fetch(`${w.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ items: [{ text: "x" }], params: { options: { profile: "tiny" } } }),
    });
    const optionBody = await byOption.json();
    for (const [status, body] of [[byName.status, byName.body], [info.status, infoBody]]) {
      assert.equal(status, 400);
      assert.equal(body.detail.code, "INVALID_INPUT");
      assert.match(body.detail.message, /model 'fixture\/dense' has no profile 'tiny'/);
      assert.match(body.detail.message, /default, small/);
    }
    assert.equal(byOption.status, 400, JSON.stringify(optionBody));
    assert.equal(optionBody.detail.code, "INVALID_INPUT");
    const nf = await fetch(`${w.url}/v1/models/nope%2Fnothing%3Atiny`);
    assert.equal(nf.status, 404);
    assert.equal((await nf.json()).detail.code, "MODEL_NOT_FOUND");
  } finally {
    await w.close();
  }
});

Deno.test("SVC_MODEL_FILTER hides models (404 everywhere)", async () => {
  const w = await startFakeBackendWorker({ SVC_MODEL_FILTER: "fixture/dense" });
  try {
    const list = await (await fetch(`${w.url}/v1/models`)).json();
    assert.deepEqual(list.models.map((m: { name: string }) => m.name), ["fixture/dense"]);
    const enc = await ENCODE(w.url, "fixture/sparse");
    assert.equal(enc.status, 404);
    assert.equal(enc.body.detail.code, "MODEL_NOT_FOUND");
    assert.equal((await fetch(`${w.url}/v1/models/fixture/sparse`)).status, 404);
  } finally {
    await w.close();
  }
});

Deno.test("SVC_PRELOAD_MODELS loads before ready; /readyz is 503 until then", async () => {
  const w = await startFakeBackendWorker({ SVC_PRELOAD_MODELS: "fixture/dense" }, {
    preload: false,
  });
  try {
    assert.equal((await fetch(`${w.url}/readyz`)).status, 503);
    await w.instance.preload();
    const ready = await fetch(`${w.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal(await ready.text(), "ok");
    const info = await (await fetch(`${w.url}/v1/models/fixture/dense`)).json();
    assert.equal(info.loaded, true);
  } finally {
    await w.close();
  }
});

Deno.test("idle models are evicted least-recently-used first (model cap and memory pressure)", async () => {
  const w = await startTestWorker({ SVC_MAX_LOADED_MODELS: "2" });
  try {
    assert.equal((await ENCODE(w.url, "fixture/dense")).status, 200);
    assert.equal((await ENCODE(w.url, "fixture/static")).status, 200);
    assert.equal((await ENCODE(w.url, "fixture/dense")).status, 200); // dense is now most recent
    assert.equal((await ENCODE(w.url, "fixture/colbert")).status, 200);
    const state = async (m: string) =>
      (await (await fetch(`${w.url}/v1/models/${m}`)).json()).state;
    assert.equal(await state("fixture/static"), "available", "LRU model evicted");
    assert.equal(await state("fixture/dense"), "loaded");
    assert.equal(await state("fixture/colbert"), "loaded");
    assert.equal(events(w.logs, "model_evicted", "fixture/static"), 1);
  } finally {
    await w.close();
  }
  // A threshold below current usage: every load evicts the other idle models.
  const p = await startTestWorker({ SVC_MEMORY_PRESSURE_THRESHOLD_PERCENT: "1" });
  try {
    assert.equal((await ENCODE(p.url, "fixture/dense")).status, 200);
    assert.equal((await ENCODE(p.url, "fixture/static")).status, 200);
    const info = await (await fetch(`${p.url}/v1/models/fixture/dense`)).json();
    assert.equal(info.state, "available");
    assert.ok(p.logs.some((l) => l.includes("memory_pressure")));
  } finally {
    await p.close();
  }
});
