/**
 * Issue 16.10 with real processes: every model can trigger provisioning. A freshly started router
 * with an empty pool answers 202 (not 404) for a model only workers know, whether named by
 * SVC_EXTRA_MODELS (for routers without a file system) or by nobody (it goes to bundle
 * `default`); once a worker of that pool has joined, the named model is served and a model it
 * does not know is a 404.
 */
import assert from "node:assert/strict";
import {
  fleetEnv,
  spawnDeno,
  startRouterProcess,
  startWorkerProcess,
} from "../../observability/helpers/process.ts";
import { waitForWorkers } from "../../hardening/helpers.ts";

/** POST a one-item encode through the router to the cpu pool; status and JSON body. */
async function encode(url: string, model: string) {
  const res = await fetch(`${url}/v1/encode/${encodeURIComponent(model)}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json",
      "x-svc-machine-profile": "cpu",
    },
    body: JSON.stringify({ items: [{ text: "hello" }] }),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, body: await res.json() };
}

Deno.test({
  name: "scale from zero: an empty pool answers 202 for models only workers know",
  async fn() {
    const r = await startRouterProcess({
      SVC_MACHINE_PROFILES: "cpu",
      SVC_EXTRA_MODELS: "fixture/reranker=extract-like,fixture/dense=default",
    });
    let w;
    try {
      // Before any worker: the setting names fixture/dense and fixture/reranker's bundles.
      const named = await encode(r.url, "fixture/dense");
      assert.equal(named.status, 202, JSON.stringify(named.body));
      assert.equal(named.body.bundle, "default");
      const other = await encode(r.url, "fixture/reranker");
      assert.equal(other.status, 202);
      assert.equal(other.body.bundle, "extract-like", "the setting's bundle, not a guess");
      // Nobody names this one: the default bundle is asked for (documented).
      const guessed = await encode(r.url, "acme/only-on-workers");
      assert.equal(guessed.status, 202);
      assert.equal(guessed.body.bundle, "default");
      // A name that cannot be a model id is still a 404.
      assert.equal((await encode(r.url, "acme/../etc")).status, 404);

      w = await startWorkerProcess(fleetEnv(r.url, "zero-worker"));
      await waitForWorkers(r.url, 1);
      const served = await encode(r.url, "fixture/dense");
      assert.equal(served.status, 200, JSON.stringify(served.body));
      // The pool now has a worker of bundle default, which would have reported the model.
      const unknown = await encode(r.url, "acme/only-on-workers");
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.detail.code, "MODEL_NOT_FOUND");
    } finally {
      await w?.proc.stop();
      await r.proc.stop();
    }
  },
});

Deno.test({
  name: "scale from zero: a bad SVC_EXTRA_MODELS refuses to start, naming the variable",
  async fn() {
    for (const bad of ["fixture/dense", "../x=default", '{"a/b": 5}', "a/b=Not A Slug"]) {
      const proc = spawnDeno(["run", "-P=router", "router/main.ts"], {
        SVC_HOST: "127.0.0.1",
        SVC_PORT: "0",
        SVC_EXTRA_MODELS: bad,
      });
      try {
        assert.equal((await proc.status).code, 2, bad);
        assert.match(proc.output(), /SVC_EXTRA_MODELS/);
      } finally {
        await proc.stop();
      }
    }
  },
});
