/**
 * End to end: the result cache in front of one real worker, through a router with two API keys.
 * The worker's own `svc_requests_total` counts what reached it: 50 repeats of one encode cost it at most one request, 16 identical requests in flight reach it
 * once, and `no-store` or the second key each reach it. The revision the worker announces is the
 * one its answers name.
 */
import assert from "node:assert/strict";
import {
  json,
  metricValue,
  type Proc,
  startRouterProc,
  startWorkerProc,
  stopAll,
} from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";
import { MODEL_REVISION_RE } from "@svc/shared/fleet/protocol";

const KEY_1 = "cache-e2e-key-one-0001";
const KEY_2 = "cache-e2e-key-two-0002";
const MODEL = "fixture/dense";
const SERIES = `svc_requests_total{model="${MODEL}",endpoint="encode",status="200"}`;

Deno.test({
  name: "e2e: result cache and coalescing against a real worker, two API keys",
  fn: async (t) => {
    const procs: Proc[] = [];
    try {
      const r = await startRouterProc("router-cache", {
        SVC_API_KEYS: `${KEY_1},${KEY_2}`,
        SVC_STATUS_INTERVAL_MS: "200",
        SVC_HEARTBEAT_INTERVAL_MS: "200",
      });
      procs.push(r.proc);
      const worker = await startWorkerProc("cache-worker", r.url, {
        SVC_MACHINE_PROFILE: "cpu",
        SVC_PRELOAD_MODELS: MODEL,
      });
      procs.push(worker);
      const port = Number((await worker.waitForLine(/worker listening .*port=(\d+)/, 60_000))[1]);
      const workerUrl = `http://127.0.0.1:${port}`;
      const auth = (key: string) => ({ authorization: `Bearer ${key}` });
      // The preloaded model's revision reaches the router with the worker's registration.
      let revision = "";
      await waitFor(
        async () => {
          const h = await json(`${r.url}/health`, { headers: auth(KEY_1) });
          const workers = (h.body.workers ?? []) as { id: string }[];
          if (!workers.some((w) => w.id === "cache-worker")) return false;
          const res = await send(r.url, "warm-up text", auth(KEY_1));
          revision = res.headers.get("x-svc-model-revision") ?? "";
          return res.status === 200;
        },
        "the worker to serve",
        { timeoutMs: 90_000, everyMs: 300 },
      );
      assert.match(revision, MODEL_REVISION_RE);
      const served = () => workerCount(workerUrl);

      await t.step("50 repeats of one encode: hits; the worker sees at most one", async () => {
        const before = await served();
        const answers: Awaited<ReturnType<typeof send>>[] = [];
        for (let i = 0; i < 50; i++) {
          answers.push(await send(r.url, "a repeated query", auth(KEY_1)));
        }
        assert.ok(answers.every((a) => a.status === 200));
        const hits = answers.filter((a) => a.headers.get("x-svc-cache") === "hit").length;
        assert.ok(hits >= 49, `${hits} hits of 50`);
        assert.ok((await served()) - before <= 1, "the worker computed it at most once");
        // Every answer is the same bytes.
        assert.ok(answers.every((a) => a.body === answers[0].body));
        assert.equal(answers[0].headers.get("x-svc-model-revision"), revision);
      });

      await t.step("16 identical concurrent misses reach the worker once", async () => {
        const before = await served();
        const answers = await Promise.all(
          Array.from({ length: 16 }, () => send(r.url, "sixteen at once", auth(KEY_1))),
        );
        assert.ok(answers.every((a) => a.status === 200 && a.body === answers[0].body));
        // Those that arrived after the first answer was stored are hits; the rest followed it.
        assert.equal(
          answers.filter((a) => a.headers.get("x-svc-cache") === "miss").length,
          1,
        );
        assert.equal((await served()) - before, 1);
      });

      await t.step("no-store and the second key each reach the worker", async () => {
        const before = await served();
        const noStore = await send(r.url, "a repeated query", {
          ...auth(KEY_1),
          "cache-control": "no-store",
        });
        assert.equal(noStore.headers.get("x-svc-cache"), "bypass");
        assert.equal((await served()) - before, 1);
        const other = await send(r.url, "a repeated query", auth(KEY_2));
        assert.equal(other.headers.get("x-svc-cache"), "miss");
        assert.equal((await served()) - before, 2);
        // The same vectors for both tenants: the cache keeps them apart, the model does not.
        assert.deepEqual(JSON.parse(other.body).items, JSON.parse(noStore.body).items);
        const again = await send(r.url, "a repeated query", auth(KEY_2));
        assert.equal(again.headers.get("x-svc-cache"), "hit");
        assert.equal(again.body, other.body);
      });

      await t.step("the router's metrics count the hits and the bypass", async () => {
        const text = (await json(`${r.url}/metrics`, { headers: auth(KEY_1) })).body.text as string;
        assert.ok(metricValue(text, 'svc_router_cache_requests_total{result="hit"}') >= 49);
        assert.ok(metricValue(text, 'svc_router_cache_requests_total{result="bypass"}') === 1);
        assert.ok(metricValue(text, "svc_router_cache_bytes") > 0);
      });
    } finally {
      await stopAll(procs);
    }
  },
});

/** One encode through the router; its status, headers and body text. */
async function send(
  routerUrl: string,
  text: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Headers; body: string }> {
  const res = await fetch(`${routerUrl}/v1/encode/${encodeURIComponent(MODEL)}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json",
      "x-svc-machine-profile": "cpu",
      ...headers,
    },
    body: JSON.stringify({ items: [{ text }] }),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** The worker's own count of encodes it answered 200. */
async function workerCount(workerUrl: string): Promise<number> {
  const res = await fetch(`${workerUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
  return metricValue(await res.text(), SERIES);
}
