/**
 * A router in front of a worker started with SVC_MODELS (real processes on 127.0.0.1): before any
 * worker, SVC_EXTRA_MODELS gives the pool a 202 for a model only workers know; once the worker
 * has registered, the router routes its detected models like catalog ones (learned from the
 * announcement), lists them with what was detected, forwards a failed entry's reason, and
 * answers a misspelt name with a 404 naming the closest known name.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  encode,
  json,
  type Proc,
  startRouterProc,
  startWorkerProc,
  stopAll,
  workerIds,
} from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";
import type { Json } from "../../worker/harness.ts";
import { cosine } from "../../worker/expected.ts";
import {
  checkpointRepo,
  optimumExport,
  sentenceTransformersRepo,
} from "../../user_models/repos.ts";
import { referenceVector } from "../../user_models/reference.ts";

const CPU = { "X-SVC-MACHINE-PROFILE": "cpu" };

Deno.test({
  name: "SVC_MODELS behind a router: scale from zero, routing, listing, failures, typos",
  fn: async () => {
    const root = await Deno.makeTempDir({ prefix: "svc-user-router-" });
    const repos = {
      "acme/emb-mean": await sentenceTransformersRepo(join(root, "emb-mean"), { pooling: "mean" }),
      "acme/rr": await optimumExport("reranker", join(root, "rr")),
      "acme/ner": await optimumExport("ner", join(root, "ner")),
      "acme/no-onnx": await checkpointRepo(join(root, "no-onnx")),
    };
    let router: Proc | undefined;
    let worker: Proc | undefined;
    try {
      const r = await startRouterProc("user-router", {
        SVC_MACHINE_PROFILES: "cpu",
        SVC_EXTRA_MODELS: "acme/emb-mean=default",
        SVC_WORKER_STALE_MS: "120000",
      });
      router = r.proc;
      // Scaled to zero: a model only workers know still gets its pool's 202.
      const early = await encode(r.url, "acme/emb-mean", CPU);
      assert.equal(early.status, 202, await early.clone().text());
      assert.equal((await early.json()).bundle, "default");

      worker = await startWorkerProc("user-worker", r.url, {
        SVC_MACHINE_PROFILE: "cpu",
        SVC_MODEL_FILTER: "fixture/dense",
        SVC_DEVICE: "cpu",
        SVC_MODELS: Object.entries(repos).map(([id, dir]) => `${id}=${dir}`).join(","),
      });
      await waitFor(async () => (await workerIds(r.url)).length === 1, "worker registered", 60_000)
        .catch((err) => {
          throw new Error(`${err.message}\n${worker?.tail(20)}`);
        });

      const enc = await encode(r.url, "acme/emb-mean", CPU, ["red apples"]);
      assert.equal(enc.status, 200, await enc.clone().text());
      const got = (await enc.json()).items[0].dense.values as number[];
      const want = await referenceVector(
        repos["acme/emb-mean"],
        "onnx/model.onnx",
        "red apples",
        "mean",
      );
      assert.ok(cosine(got, want) > 0.9999);

      const post = (path: string, body: unknown) =>
        json(`${r.url}${path}`, {
          method: "POST",
          headers: { ...CPU, "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify(body),
        });
      const score = await post("/v1/score/acme/rr", {
        query: { text: "red apples" },
        items: [{ text: "apples" }, { text: "bonds" }],
      });
      assert.equal(score.status, 200, JSON.stringify(score.body));
      const ner = await post("/v1/extract/acme/ner", { items: [{ text: "Alice lives in Paris" }] });
      assert.equal(ner.status, 200, JSON.stringify(ner.body));

      // Listed by the router with what was detected; the failed entry with its reason.
      const models = (await json(`${r.url}/v1/models`)).body.models as Record<string, unknown>[];
      const mean = models.find((m) => m.name === "acme/emb-mean") as Json;
      assert.equal(mean.family, "dense");
      assert.deepEqual(mean.dims, { dense: 32 });
      assert.equal(mean.max_sequence_length, 64);
      const one = await json(`${r.url}/v1/models/acme/emb-mean`);
      assert.equal((one.body.detected as Json).settings.pooling.value, "mean");
      const failed = models.find((m) => m.name === "acme/no-onnx") as Json;
      assert.equal(failed.state, "failed");
      const bad = await post("/v1/encode/acme/no-onnx", { items: [{ text: "x" }] });
      assert.equal(bad.status, 502);
      assert.match((bad.body.detail as Json).message, /ONNX/);

      // A misspelt name: 404 naming the closest name the fleet serves.
      const typo = await post("/v1/encode/acme/emb-maen", { items: [{ text: "x" }] });
      assert.equal(typo.status, 404, JSON.stringify(typo.body));
      assert.match((typo.body.detail as Json).message, /did you mean acme\/emb-mean\?/);
      const typoInfo = await json(`${r.url}/v1/models/acme/emb-maen`);
      assert.equal(typoInfo.status, 404);
      assert.match((typoInfo.body.detail as Json).message, /did you mean acme\/emb-mean\?/);
    } finally {
      await stopAll([worker, router]);
      await Deno.remove(root, { recursive: true });
    }
  },
});
