/**
 * Issue 16.12: a request still running when the shutdown drain bound ends gets 503 SHUTTING_DOWN
 * with Retry-After (so the router or the client retries elsewhere), never a 500 from its model
 * being torn down under it. The drain the process runs on SIGTERM (worker/server/lifecycle.ts),
 * run here in this process on a fake backend whose batch never finishes by itself; the signal and
 * the exit code of a real process are tests/e2e/observability/shutdown.test.ts's.
 */
import assert from "node:assert/strict";
import { startFakeBackendWorker } from "../worker/harness.ts";
import { deferred } from "../worker/fake_backend.ts";
import { drainWorker } from "#worker/server/lifecycle.ts";
import { waitFor } from "../helpers/wait.ts";

Deno.test("shutdown: requests still running at the drain bound get 503 + Retry-After, not 500", async () => {
  const w = await startFakeBackendWorker({
    SVC_PRELOAD_MODELS: "fixture/dense",
    SVC_SHUTDOWN_DRAIN_S: "0.5",
  });
  try {
    // The batch on the (fake) thread runs until its model is unloaded.
    w.backend.hold = deferred();
    const text = "the quick brown fox jumps over the lazy dog ".repeat(20);
    const body = JSON.stringify({
      items: Array.from({ length: 1024 }, (_, i) => ({ text: `${i} ${text}` })),
    });
    const answers = Array.from({ length: 3 }, () =>
      fetch(`${w.url}/v1/encode/fixture/dense`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body,
      }).then(async (res) => ({
        status: res.status,
        retryAfter: res.headers.get("retry-after"),
        body: await res.json(),
      })));
    // Work is running, then the worker is told to stop.
    await waitFor(
      () => (w.backend.runners.get("fixture/dense")?.batches.length ?? 0) > 0,
      "the first batch to run",
    );
    const drained = await drainWorker(w.instance, { server: w.server }, "SIGTERM");
    for (const a of await Promise.all(answers)) {
      assert.equal(a.status, 503, JSON.stringify(a.body));
      assert.equal(a.body.detail.code, "SHUTTING_DOWN");
      assert.equal(a.retryAfter, "5");
    }
    // The drain ended (the process exits 0 after it), cut short by its bound.
    assert.equal(drained, false);
    assert.ok(w.logs.some((l) => l.includes('"msg":"drain finished","drained":false')));
  } finally {
    await w.close();
  }
});
