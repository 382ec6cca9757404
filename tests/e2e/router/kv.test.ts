/**
 * End to end: two router processes sharing one Deno KV database (as isolates on Deno Deploy do).
 * The worker dials router A; router B sees it and routes to it; when it leaves, B forgets it.
 * Locally a KV file needs read/write on its path; on Deno Deploy no path is given.
 */
import assert from "node:assert/strict";
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

Deno.test({
  name: "e2e: two routers sharing one KV path see each other's workers",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "e2e-kv-" });
    const kvPath = `${dir}/fleet.kv`;
    // The stale bound is far beyond every wait: B learns of the worker's exit through KV only.
    const env = {
      SVC_DIRECTORY: "kv",
      SVC_KV_PATH: kvPath,
      SVC_KV_REFRESH_MS: "200",
      SVC_WORKER_STALE_MS: "120000",
      SVC_MACHINE_PROFILES: "cpu",
      SVC_EXPOSE_WORKER_ID: "1",
      // Which worker answered is what the test reads: repeats must be routed, not cache hits.
      SVC_RESULT_CACHE_BYTES: "0",
    };
    const flags = [`--allow-read=${dir}`, `--allow-write=${dir}`];
    const procs: Proc[] = [];
    try {
      const a = await startRouterProc("router-a", env, flags);
      procs.push(a.proc);
      const b = await startRouterProc("router-b", env, flags);
      procs.push(b.proc);
      // Over HTTP: a worker's connection is held by one router, so only that router can send
      // requests over it; B reaches the worker at its advertised URL.
      const w = await startWorkerProc("kv-w", a.url, {
        SVC_MACHINE_PROFILE: "cpu",
        SVC_WORKER_TRANSPORT: "http",
      });
      procs.push(w);
      await waitFor(
        async () => (await workerIds(a.url)).includes("kv-w"),
        "registration on A",
        60_000,
      );
      const seenMs = await waitFor(
        async () => (await workerIds(b.url)).includes("kv-w"),
        "B sees the worker",
      );
      console.log(`  router B saw the worker ${seenMs.toFixed(0)} ms after A registered it`);
      const h = await json(`${b.url}/health`);
      assert.equal(h.body.directory, "kv");
      const res = await encode(b.url, "fixture/dense", { "X-SVC-MACHINE-PROFILE": "cpu" });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-svc-worker-id"), "kv-w");
      await res.body?.cancel();
      w.signal("SIGKILL");
      const goneMs = await waitFor(
        async () => !(await workerIds(b.url)).includes("kv-w"),
        "B forgets the worker",
      );
      console.log(`  router B dropped the killed worker after ${goneMs.toFixed(0)} ms`);
      const p = await encode(b.url, "fixture/dense", { "X-SVC-MACHINE-PROFILE": "cpu" });
      assert.equal(p.status, 202, "the learned fixture model is still known: 202, not 404");
      await p.body?.cancel();
    } finally {
      await stopAll(procs);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
