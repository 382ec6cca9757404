/**
 * Issue 16.4: work of clients that went away is dropped. Six clients post 1024 long texts each
 * (bodies far over 1 KB, where Deno.serve's request signal never fired) over raw sockets and
 * disconnect; their queued items are dropped and the runs of theirs not yet started are skipped,
 * so a fresh request is answered at once instead of after all of it.
 */
import assert from "node:assert/strict";
import { startWorkerProcess } from "../../observability/helpers/process.ts";
import { abandonThenProbe } from "./abandon.ts";

Deno.test({
  name: "abandoned work: disconnected clients' items are dropped; a fresh request is not stuck",
  async fn() {
    const w = await startWorkerProcess({
      SVC_PRELOAD_MODELS: "fixture/dense",
      // One 128-token item per ONNX run: 64 runs per batch, so skipping inside a batch shows.
      SVC_MAX_RUN_TOKENS: "128",
      SVC_LOG_LEVEL: "debug",
    });
    try {
      const { ran, all, freshMs } = await abandonThenProbe(
        w.url,
        w.url,
        "/v1/encode/fixture/dense",
        60_000,
      );
      // Before: every abandoned item ran (all of `all`) ahead of the fresh request.
      assert.ok(
        ran < all / 2,
        `ran ${ran} of ${all} abandoned tokens (fresh answer after ${freshMs} ms)`,
      );
      await w.proc.waitForLog(
        "a debug line for the disconnect",
        (l) => l.msg === "client disconnected" && l.level === "debug",
        10_000,
      );
      assert.ok(!w.proc.stdout().includes("unhandled error"), "no disconnect became a 500");
    } finally {
      await w.proc.stop();
    }
  },
});
