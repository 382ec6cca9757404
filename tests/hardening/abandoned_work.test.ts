/**
 * Issue 16.4: work of clients that went away is dropped. Six clients post 1024 long texts each
 * (bodies far over 1 KB, where Deno.serve's request signal never fired) over raw sockets and
 * disconnect; their queued items are dropped and the runs of theirs not yet started are skipped,
 * so a fresh request is answered at once instead of after all of it.
 */
import assert from "node:assert/strict";
import { startWorkerProcess } from "../observability/helpers/process.ts";
import { scrape, sum } from "../observability/helpers/prom_text.ts";
import { rawRequest, within } from "./helpers.ts";

const CLIENTS = 6;
const ITEMS = 1024;

/** Tokens the worker has run for fixture/dense so far. */
async function tokensRun(url: string): Promise<number> {
  return sum(await scrape(url), "svc_tokens_processed_total", {
    model: "fixture/dense",
  });
}

Deno.test({
  name: "abandoned work: disconnected clients' items are dropped; a fresh request is not stuck",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const w = await startWorkerProcess({
      SVC_PRELOAD_MODELS: "fixture/dense",
      // One 128-token item per ONNX run: 64 runs per batch, so skipping inside a batch shows.
      SVC_MAX_RUN_TOKENS: "128",
      SVC_LOG_LEVEL: "debug",
    });
    const sockets = [];
    try {
      const text = "the quick brown fox jumps over the lazy dog ".repeat(20);
      const body = JSON.stringify({
        items: Array.from({ length: ITEMS }, (_, i) => ({ text: `${i} ${text}` })),
      });
      const perItem = 128; // fixture/dense truncates at its 128-token maximum
      const before = await tokensRun(w.url);
      for (let i = 0; i < CLIENTS; i++) {
        sockets.push(rawRequest(
          w.url,
          "POST /v1/encode/fixture/dense HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
            `Accept: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        ));
      }
      // Work has begun (the first batch finished), then every client goes away 0.4 s later.
      const started = performance.now();
      while ((await tokensRun(w.url)) === before) {
        assert.ok(performance.now() - started < 30_000, "no work started");
        await new Promise((r) => setTimeout(r, 20));
      }
      await new Promise((r) => setTimeout(r, 400));
      for (const s of sockets) s.socket.destroy();
      const t0 = performance.now();
      const res = await within(
        fetch(`${w.url}/v1/encode/fixture/dense`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify({ items: [{ text: "fresh" }] }),
        }),
        60_000,
        "the fresh request",
      );
      assert.equal(res.status, 200);
      await res.body?.cancel();
      const waited = performance.now() - t0;
      const ran = (await tokensRun(w.url)) - before;
      const all = CLIENTS * ITEMS * perItem;
      // Before: every abandoned item ran (all of `all`) ahead of the fresh request.
      assert.ok(
        ran < all / 2,
        `ran ${ran} of ${all} abandoned tokens (fresh answer after ${waited} ms)`,
      );
      await w.proc.waitForLog(
        "a debug line for the disconnect",
        (l) => l.msg === "client disconnected" && l.level === "debug",
        10_000,
      );
      assert.ok(!w.proc.stdout().includes("unhandled error"), "no disconnect became a 500");
    } finally {
      for (const s of sockets) s.socket.destroy();
      await w.proc.stop();
    }
  },
});
