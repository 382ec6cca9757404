/**
 * End to end: three router processes on one KV file (SVC_KV_PATH), started with `deno task
 * router`'s command line (it grants read and write on that path alone), are one fleet. A worker dials router A; the
 * same body misses once and then hits on every router; 202s for an empty pool show the fleet's
 * total demand on every router; a drain sent to router C drains the worker held by A.
 */
import assert from "node:assert/strict";
import { encode, json, Proc, startWorkerProc, stopAll } from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";
import { startThreeTaskRouters } from "../start/tasks.ts";

Deno.test({
  name: "e2e: three routers on one KV file share cache, demand and drains",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "e2e-kv-fleet-" });
    const kvPath = `${dir}/fleet.kv`;
    const env = {
      SVC_DIRECTORY: "kv",
      SVC_KV_PATH: kvPath,
      SVC_KV_REFRESH_MS: "200",
      SVC_WORKER_STALE_MS: "120000",
      SVC_MACHINE_PROFILES: "cpu,gpu",
      SVC_EXTRA_MODELS: "org/known=default",
    };
    const procs: Proc[] = [];
    try {
      const routers = await startThreeTaskRouters(env, procs);
      const [a, b, c] = routers;
      // Over HTTP: every router reaches it at its advertised URL (a connection-only worker is
      // reached through the router holding its socket: tests/e2e/router/kv_relay.test.ts).
      procs.push(
        await startWorkerProc("kv-fleet-w", a.url, {
          SVC_MACHINE_PROFILE: "cpu",
          SVC_WORKER_TRANSPORT: "http",
        }),
      );
      for (const r of routers) {
        await waitFor(
          async () => (await json(`${r.url}/health`)).body.worker_count === 1,
          `${r.url} sees the worker`,
          60_000,
        );
      }
      const cpu = { "X-SVC-MACHINE-PROFILE": "cpu" };
      // The model loads on a first request; an answer is kept only once the router answering
      // sees the worker announce its revision (through KV, for a worker held elsewhere).
      const warm = await encode(b.url, "fixture/dense", cpu, ["warm up"]);
      assert.equal(warm.status, 200);
      await warm.body?.cancel();
      for (const r of routers) {
        await waitFor(async () => {
          const h = (await json(`${r.url}/health`)).body;
          return (h.loaded_models as string[] | undefined)?.includes("fixture/dense") === true;
        }, `${r.url} sees the model loaded`);
      }
      const texts = ["one body, three routers"];
      const first = await encode(b.url, "fixture/dense", cpu, texts);
      assert.equal(first.status, 200);
      assert.equal(first.headers.get("x-svc-cache"), "miss");
      const answer = await first.text();
      // The shared tier is written in the background: wait for the entry in the KV file.
      const kv = await Deno.openKv(kvPath);
      try {
        await waitFor(async () => {
          for await (const e of kv.list({ prefix: ["svc", "cache"] })) {
            if (e.key.at(-1) === "h") return true;
          }
          return false;
        }, "the answer in KV");
      } finally {
        kv.close();
      }
      for (const r of [a, c, b]) {
        const res = await encode(r.url, "fixture/dense", cpu, texts);
        assert.equal(res.headers.get("x-svc-cache"), "hit", `${r.url}`);
        assert.equal(await res.text(), answer);
      }
      // Demand of an empty pool, counted across the routers.
      const pending = async (url: string) => {
        const res = await encode(url, "org/known", { "X-SVC-MACHINE-PROFILE": "gpu" });
        assert.equal(res.status, 202);
        return (await res.json()).pending as number;
      };
      const demandOn = async (url: string) =>
        ((await json(`${url}/health`)).body.pending_demand as { pending: number }[])[0]?.pending;
      for (let i = 1; i <= 3; i++) assert.equal(await pending(a.url), i);
      await waitFor(async () => (await demandOn(b.url)) === 3, "b sees a's demand");
      assert.equal(await pending(b.url), 4);
      await waitFor(async () => (await demandOn(c.url)) === 4, "c sees the total");
      assert.equal(await pending(c.url), 5);
      // A drain sent to C, which does not hold the worker's socket.
      const drained = await json(`${c.url}/v1/admin/workers/kv-fleet-w/drain`, {
        method: "POST",
      });
      assert.equal(drained.status, 200, JSON.stringify(drained.body));
      assert.equal(drained.body.state, "draining");
      for (const r of routers) {
        await waitFor(
          async () => (await json(`${r.url}/readyz`)).body.healthy_workers === 0,
          `${r.url} sees the drain`,
        );
      }
      // What `deno task status` and `models` read is the same whichever router answers.
      const views = await Promise.all(routers.map(async (r) => {
        const h = (await json(`${r.url}/health`)).body;
        const workers = (h.workers as { id: string; state: string; models: unknown[] }[])
          .map((w) => ({ id: w.id, state: w.state, models: w.models }));
        const list = (await json(`${r.url}/v1/models`)).body;
        // OpenAI's `created` is each process's start time: the one field that differs.
        const data = (list.data as { created?: number }[]).map(({ created: _, ...m }) => m);
        const models = JSON.stringify({ ...list, data });
        return { workers, models, loaded: h.loaded_models };
      }));
      assert.deepEqual(views[1], views[0]);
      assert.deepEqual(views[2], views[0]);
    } finally {
      await stopAll(procs);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
