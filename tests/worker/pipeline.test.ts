/**
 * The worker's steps (worker/server/pipeline.ts) run on both paths: the app's routes and the
 * model operations served directly. While draining, both answer 503 SHUTTING_DOWN, in the
 * route's error envelope, with the version headers, and both are recorded; the probes stay open.
 * The models run on a fake backend: this is about the steps, not outputs.
 */
import assert from "node:assert/strict";
import { VERSION } from "@svc/shared/version";
import { startFakeBackendWorker } from "./harness.ts";

Deno.test("pipeline: app routes and model operations pass the same steps (drain, envelope, version, record)", async () => {
  const w = await startFakeBackendWorker({ SVC_LOG_LEVEL: "info" });
  try {
    w.instance.ctx.state.draining = true;
    const post = (path: string) =>
      fetch(`${w.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"model":"fixture/dense","input":"hi","items":[{"text":"hi"}]}',
      });
    const models = await fetch(`${w.url}/v1/models`);
    const encode = await post("/v1/encode/fixture/dense");
    const openai = await post("/v1/embeddings");
    const healthz = await fetch(`${w.url}/healthz`);
    assert.deepEqual(
      [models.status, encode.status, openai.status, healthz.status],
      [503, 503, 503, 200],
    );
    assert.equal((await models.json()).detail.code, "SHUTTING_DOWN");
    assert.equal((await encode.json()).detail.code, "SHUTTING_DOWN");
    const body = await openai.json();
    assert.equal(body.detail.code, "SHUTTING_DOWN");
    assert.equal(body.error?.type, "server_error", "OpenAI's envelope on its route");
    await healthz.body?.cancel();
    for (const res of [models, encode, openai, healthz]) {
      assert.equal(res.headers.get("x-svc-server-version"), VERSION);
    }
    const recorded = (path: string) =>
      w.logs.some((line) => {
        const entry = JSON.parse(line);
        return entry.msg === "request" && entry.path === path && entry.status === 503;
      });
    for (const path of ["/v1/models", "/v1/encode/fixture/dense", "/v1/embeddings"]) {
      assert.ok(recorded(path), `${path} recorded`);
    }
  } finally {
    w.instance.ctx.state.draining = false;
    await w.close();
  }
});
