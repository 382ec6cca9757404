/**
 * Issue 16.4 through the router: clients that go away in the middle of a request to the ROUTER
 * cancel its request to the worker, so the worker drops their work. Six clients post 1024 long
 * texts each (bodies far over 1 KB, where Deno.serve's request signal never fires) to a real
 * router process in front of a real worker process, over raw sockets, and disconnect; a fresh
 * request through the router is then answered without waiting behind their work.
 */
import assert from "node:assert/strict";
import {
  fleetEnv,
  startRouterProcess,
  startWorkerProcess,
} from "../observability/helpers/process.ts";
import { scrape, sum } from "../observability/helpers/prom_text.ts";
import { waitFor } from "../helpers/wait.ts";
import { rawRequest, within } from "./helpers.ts";

const CLIENTS = 6;
const ITEMS = 1024;

/** Tokens the worker has run for fixture/dense so far. */
async function tokensRun(url: string): Promise<number> {
  return sum(await scrape(url), "svc_tokens_processed_total", { model: "fixture/dense" });
}

Deno.test({
  name: "router disconnect: a client leaving the router cancels the worker's work for it",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const r = await startRouterProcess({ SVC_DEFAULT_MACHINE_PROFILE: "cpu" });
    const w = await startWorkerProcess({
      ...fleetEnv(r.url, "disconnect-worker"),
      SVC_PRELOAD_MODELS: "fixture/dense",
      SVC_MAX_RUN_TOKENS: "128",
      SVC_LOG_LEVEL: "debug",
    });
    const sockets = [];
    try {
      await waitFor(
        async () => {
          const h = await (await fetch(`${r.url}/health`)).json();
          return h.loaded_models?.includes("fixture/dense");
        },
        "the worker to register with its model loaded",
        30_000,
      );
      const text = "the quick brown fox jumps over the lazy dog ".repeat(20);
      const body = JSON.stringify({
        items: Array.from({ length: ITEMS }, (_, i) => ({ text: `${i} ${text}` })),
      });
      const before = await tokensRun(w.url);
      for (let i = 0; i < CLIENTS; i++) {
        sockets.push(rawRequest(
          r.url,
          "POST /v1/encode/fixture%2Fdense HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
            `Accept: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        ));
      }
      const started = performance.now();
      while ((await tokensRun(w.url)) === before) {
        assert.ok(performance.now() - started < 30_000, "no work started");
        await new Promise((res) => setTimeout(res, 20));
      }
      await new Promise((res) => setTimeout(res, 400));
      for (const s of sockets) s.socket.destroy();
      const t0 = performance.now();
      const res = await within(
        fetch(`${r.url}/v1/encode/fixture%2Fdense`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify({ items: [{ text: "fresh" }] }),
        }),
        120_000,
        "the fresh request",
      );
      assert.equal(res.status, 200);
      await res.body?.cancel();
      const waited = performance.now() - t0;
      const ran = (await tokensRun(w.url)) - before;
      const all = CLIENTS * ITEMS * 128;
      console.log(
        `ran ${ran} of ${all} abandoned tokens; fresh answer after ${waited.toFixed(0)} ms`,
      );
      // Before: the router kept every upstream request open, so all of `all` ran first.
      assert.ok(ran < all / 2, `ran ${ran} of ${all} abandoned tokens`);
      await w.proc.waitForLog(
        "the worker to see the router's cancelled requests",
        (l) => l.msg === "client disconnected" && l.level === "debug",
        10_000,
      );
    } finally {
      for (const s of sockets) s.socket.destroy();
      await w.proc.stop();
      await r.proc.stop();
    }
  },
});
