/**
 * End to end with real processes on 127.0.0.1: a router, two `cpu` workers and one `l4` worker
 * serving the fixture models. Routing by header, affinity, provisioning 202s, SIGKILL of a
 * worker, graceful drain, and a router restart.
 */
import assert from "node:assert/strict";
import {
  encode,
  json,
  metricValue,
  type Proc,
  startRouterProc,
  startWorkerProc,
  stopAll,
  workerIds,
} from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";

const MODEL = "fixture/dense";
const CPU = { "X-SVC-MACHINE-PROFILE": "cpu" };
const L4 = { "X-SVC-MACHINE-PROFILE": "l4" };

/** Names of the workers that have `model` loaded, per /health. */
async function loadedOn(routerUrl: string, model: string): Promise<string[]> {
  const h = await json(`${routerUrl}/health`);
  return (h.body.workers as { id: string; loaded_models: string[] }[])
    .filter((w) => w.loaded_models.includes(model)).map((w) => w.id).sort();
}

Deno.test({
  name: "e2e: router + 2 cpu workers + 1 l4 worker",
  fn: async (t) => {
    let router: Proc | undefined;
    const workers: Record<string, Proc> = {};
    let router2: Proc | undefined;
    try {
      // A stale bound no wait below comes near: a worker that disappears was removed because its
      // socket dropped, never because it went quiet while the machine was busy.
      // Pools that may have no worker are listed so that they provision (else: 400).
      const r = await startRouterProc("router", {
        SVC_WORKER_STALE_MS: "120000",
        SVC_MACHINE_PROFILES: "h100,l4",
        SVC_EXPOSE_WORKER_ID: "1", // which worker answered is what the steps check
        // The steps repeat one encode: with the result cache, repeats would be answered by the
        // router (naming the worker that computed the stored answer), not routed.
        SVC_RESULT_CACHE_BYTES: "0",
      });
      router = r.proc;
      const url = r.url;
      workers["cpu-a"] = await startWorkerProc("cpu-a", url, { SVC_MACHINE_PROFILE: "cpu" });
      workers["cpu-b"] = await startWorkerProc("cpu-b", url, { SVC_MACHINE_PROFILE: "cpu" });
      workers["l4-a"] = await startWorkerProc("l4-a", url, { SVC_MACHINE_PROFILE: "l4" });
      await waitFor(async () => (await workerIds(url)).length === 3, "3 workers registered", 60_000)
        .catch((err) => {
          throw new Error(
            `${err.message}\n${Object.values(workers).map((w) => w.tail(10)).join("\n---\n")}`,
          );
        });

      await t.step("/health and /readyz describe the fleet", async () => {
        const h = await json(`${url}/health`);
        assert.equal(h.body.status, "healthy");
        assert.equal(h.body.worker_count, 3);
        assert.deepEqual(h.body.gpu_types, ["cpu", "l4"]);
        const ready = await json(`${url}/readyz`);
        assert.deepEqual(ready.body, { status: "ready", healthy_workers: 3 });
        assert.equal(h.headers.get("x-svc-server-version"), "0.1.0");
      });

      await t.step("requests are routed by the machine-profile header", async () => {
        const l4 = await encode(url, MODEL, L4);
        assert.equal(l4.status, 200, await l4.clone().text());
        assert.equal(l4.headers.get("x-svc-worker-id"), "l4-a");
        const body = await l4.json();
        assert.equal(body.items.length, 1);
        assert.equal(body.items[0].id, "i0");
        assert.equal(body.items[0].dense.values.length, body.items[0].dense.dims);
        assert.ok(l4.headers.get("x-total-time"), "worker timing headers pass through");
        const cpu = await encode(url, MODEL, { "X-SIE-MACHINE-PROFILE": "cpu" });
        assert.equal(cpu.status, 200);
        assert.match(cpu.headers.get("x-svc-worker-id") ?? "", /^cpu-[ab]$/);
        await cpu.body?.cancel();
        // Raw slash in the path works too.
        const raw = await fetch(`${url}/v1/encode/${MODEL}`, {
          method: "POST",
          headers: { ...CPU, "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify({ items: [{ text: "raw path" }] }),
        });
        assert.equal(raw.status, 200);
        await raw.body?.cancel();
        const missing = await json(`${url}/v1/encode/${encodeURIComponent(MODEL)}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
        });
        assert.equal(missing.status, 400);
        // OpenAI-compatible embeddings: the model comes from the body.
        const emb = await json(`${url}/v1/embeddings`, {
          method: "POST",
          headers: { ...L4, "content-type": "application/json" },
          body: JSON.stringify({ model: MODEL, input: ["one", "two"], encoding_format: "float" }),
        });
        assert.equal(emb.status, 200, JSON.stringify(emb.body));
        assert.equal(emb.headers.get("x-svc-worker-id"), "l4-a");
        assert.equal((emb.body.data as unknown[]).length, 2);
      });

      let warm = "";
      await t.step(
        "affinity: the worker with the model loaded takes the traffic (counters)",
        async () => {
          // A model no worker has loaded yet: the first request loads it on exactly one worker.
          const AFF = "fixture/static";
          const first = await encode(url, AFF, CPU);
          assert.equal(first.status, 200, await first.clone().text());
          warm = first.headers.get("x-svc-worker-id")!;
          await first.body?.cancel();
          await waitFor(
            async () => (await loadedOn(url, AFF)).includes(warm),
            "status to show the model loaded",
            10_000,
          );
          assert.deepEqual(await loadedOn(url, AFF), [warm]);
          const series =
            `svc_router_upstream_requests_total{worker_id="${warm}",pool="cpu",bundle="default",affinity="loaded"}`;
          const before = metricValue(await (await fetch(`${url}/metrics`)).text(), series);
          const served: string[] = [];
          for (let i = 0; i < 20; i++) {
            const res = await encode(url, AFF, CPU, [`text ${i}`]);
            assert.equal(res.status, 200);
            served.push(res.headers.get("x-svc-worker-id")!);
            await res.body?.cancel();
          }
          assert.deepEqual([...new Set(served)], [warm], `all to the loaded worker: ${served}`);
          const after = metricValue(await (await fetch(`${url}/metrics`)).text(), series);
          assert.equal(after - before, 20);
        },
      );

      await t.step(
        "a pool without workers answers 202 + Retry-After and the demand metric rises",
        async () => {
          const series = `svc_router_pending_demand{machine_profile="h100",bundle="default"}`;
          const before = metricValue(await (await fetch(`${url}/metrics`)).text(), series);
          const res = await json(`${url}/v1/encode/${encodeURIComponent(MODEL)}`, {
            method: "POST",
            headers: { "X-SVC-MACHINE-PROFILE": "h100", "content-type": "application/json" },
            body: JSON.stringify({ items: [{ text: "x" }] }),
          });
          assert.equal(res.status, 202);
          assert.ok(Number(res.headers.get("retry-after")) > 0);
          assert.equal(res.body.status, "provisioning");
          assert.equal(res.body.machine_profile, "h100");
          assert.equal(res.body.bundle, "default");
          const after = metricValue(await (await fetch(`${url}/metrics`)).text(), series);
          assert.equal(after, before + 1);
          const unknown = await json(`${url}/v1/encode/nobody%2Fknows`, {
            method: "POST",
            headers: { ...CPU, "content-type": "application/json" },
            body: "{}",
          });
          assert.equal(unknown.status, 404);
          assert.equal((unknown.body.detail as { code: string }).code, "MODEL_NOT_FOUND");
        },
      );

      await t.step(
        "SIGKILL of a worker under 4 clients: gone from /health, no plain request lost",
        async () => {
          const victim = warm;
          const survivor = victim === "cpu-a" ? "cpu-b" : "cpu-a";
          // Traffic of 4 clients before, during and after the kill.
          let stop = false;
          const results: { status: number; worker: string | null; code?: string }[] = [];
          const client = async () => {
            while (!stop) {
              const res = await encode(url, MODEL, CPU).catch(() => undefined);
              const failed = res !== undefined && res.status !== 200;
              results.push({
                status: res?.status ?? 0,
                worker: res?.headers.get("x-svc-worker-id") ?? null,
                code: failed ? (await res.json()).detail?.code : undefined,
              });
              if (!failed) await res?.body?.cancel();
            }
          };
          const traffic = Promise.all([client(), client(), client(), client()]);
          await waitFor(() => results.length >= 3, "traffic before the kill");
          const killedAt = performance.now();
          workers[victim].signal("SIGKILL");
          await waitFor(async () => !(await workerIds(url)).includes(victim), `${victim} removed`);
          const removedMs = performance.now() - killedAt;
          console.log(`  ${victim} removed from /health ${removedMs.toFixed(0)} ms after SIGKILL`);
          const atRemoval = results.length;
          await waitFor(() => results.length >= atRemoval + 3, "traffic after the removal");
          stop = true;
          await traffic;
          const failed = results.filter((r) => r.status !== 200);
          console.log(
            `  traffic during the kill: ${results.length} requests, ${failed.length} not 200`,
          );
          // The requests the victim was serving when it died are small, at no death before: sent
          // once more to the survivor (router/proxy/replay.ts). None is lost.
          assert.equal(failed.length, 0, JSON.stringify(failed));
          assert.equal(results.at(-1)?.worker, survivor);
          assert.deepEqual(await workerIds(url), [survivor, "l4-a"].sort());
        },
      );

      await t.step(
        "a graceful worker shutdown drains first: the pool answers 202, then it is gone",
        async () => {
          const l4 = workers["l4-a"];
          l4.signal("SIGTERM");
          await waitFor(async () => !(await workerIds(url)).includes("l4-a"), "l4-a gone", 10_000);
          const st = await l4.status;
          // Once exited, stop() only collects its output and removes its cache dir.
          await l4.stop();
          assert.equal(st.code, 0);
          assert.ok(
            router!.lines.some((l) => /worker draining .*worker_id=l4-a/.test(l)),
            "router saw the drain notice",
          );
          const res = await encode(url, MODEL, L4);
          assert.equal(res.status, 202);
          await res.body?.cancel();
          workers["l4-a"] = await startWorkerProc("l4-a", url, { SVC_MACHINE_PROFILE: "l4" });
          await waitFor(async () => (await workerIds(url)).includes("l4-a"), "l4-a back", 30_000);
        },
      );

      await t.step("after a router restart the workers register again and serve", async () => {
        const port = r.port;
        await router!.stop();
        router = undefined;
        const r2 = await startRouterProc("router2", {
          SVC_PORT: String(port),
          SVC_EXPOSE_WORKER_ID: "1",
          SVC_RESULT_CACHE_BYTES: "0",
          // Requests wait for workers that come back instead of a 202 (5 s by default; longer here,
          // since the workers' reconnect backoff after the router's down time varies, 0.4-3 s).
          SVC_STARTUP_HOLD_MS: "10000",
        });
        router2 = r2.proc;
        // Asked at once, before the workers are back: held until they are, then answered.
        const early = encode(r2.url, MODEL, CPU);
        const ms = await waitFor(
          async () => (await workerIds(r2.url)).length === 2,
          "re-registration",
          20_000,
        );
        console.log(`  workers re-registered ${ms.toFixed(0)} ms after the new router listened`);
        const held = await early;
        assert.equal(held.status, 200, "held, not 202, while the workers came back");
        await held.body?.cancel();
        const res = await encode(r2.url, MODEL, CPU);
        assert.equal(res.status, 200);
        await res.body?.cancel();
        const l4 = await encode(r2.url, MODEL, L4);
        assert.equal(l4.status, 200);
        assert.equal(l4.headers.get("x-svc-worker-id"), "l4-a");
        await l4.body?.cancel();
      });
    } finally {
      await stopAll([router, router2, ...Object.values(workers)]);
    }
  },
});
