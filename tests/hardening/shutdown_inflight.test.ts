/**
 * Issue 16.12: a request still running when the shutdown drain bound ends gets 503 SHUTTING_DOWN
 * with Retry-After (so the router or the client retries elsewhere), never a 500 from ONNX Runtime
 * being torn down under it.
 */
import assert from "node:assert/strict";
import { startWorkerProcess } from "../observability/helpers/process.ts";
import { scrape, sum } from "../observability/helpers/prom_text.ts";
import { waitFor } from "../helpers/wait.ts";

Deno.test({
  name: "shutdown: requests still running at the drain bound get 503 + Retry-After, not 500",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const w = await startWorkerProcess({
      SVC_PRELOAD_MODELS: "fixture/dense",
      SVC_SHUTDOWN_DRAIN_S: "0.5",
      // One 128-token item per ONNX run: 1024 items take far longer than the drain bound.
      SVC_MAX_RUN_TOKENS: "128",
    });
    try {
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
      // Work is running (tokens counted), then the worker is told to stop.
      await waitFor(
        async () =>
          sum(await scrape(w.url), "svc_tokens_processed_total", { model: "fixture/dense" }) > 0,
        "the first batch to finish",
        30_000,
      );
      w.proc.signal("SIGTERM");
      for (const a of await Promise.all(answers)) {
        assert.equal(a.status, 503, JSON.stringify(a.body));
        assert.equal(a.body.detail.code, "SHUTTING_DOWN");
        assert.equal(a.retryAfter, "5");
      }
      assert.equal((await w.proc.status).code, 0);
    } finally {
      await w.proc.stop();
    }
  },
});
