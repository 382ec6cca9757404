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
} from "../../observability/helpers/process.ts";
import { waitFor } from "../../helpers/wait.ts";
import { abandonThenProbe } from "./abandon.ts";

Deno.test({
  name: "router disconnect: a client leaving the router cancels the worker's work for it",
  async fn() {
    const r = await startRouterProcess({ SVC_DEFAULT_MACHINE_PROFILE: "cpu" });
    let w;
    try {
      w = await startWorkerProcess({
        ...fleetEnv(r.url, "disconnect-worker"),
        SVC_PRELOAD_MODELS: "fixture/dense",
        SVC_MAX_RUN_TOKENS: "128",
        SVC_LOG_LEVEL: "debug",
      });
      await waitFor(
        async () => {
          const h = await (await fetch(`${r.url}/health`)).json();
          return h.loaded_models?.includes("fixture/dense");
        },
        "the worker to register with its model loaded",
        30_000,
      );
      const { ran, all, freshMs } = await abandonThenProbe(
        r.url,
        w.url,
        "/v1/encode/fixture%2Fdense",
        120_000,
      );
      console.log(
        `ran ${ran} of ${all} abandoned tokens; fresh answer after ${freshMs.toFixed(0)} ms`,
      );
      // Before: the router kept every upstream request open, so most of `all` ran first.
      assert.ok(ran < all / 2, `ran ${ran} of ${all} abandoned tokens`);
      await w.proc.waitForLog(
        "the worker to see the router's cancelled requests",
        (l) => l.msg === "client disconnected" && l.level === "debug",
        10_000,
      );
    } finally {
      await w?.proc.stop();
      await r.proc.stop();
    }
  },
});
