/**
 * End to end, the connection transport (issue 33): two real workers the router cannot reach over
 * HTTP (one advertises a closed port, one no URL at all) serve every kind of request through the
 * router over the WebSocket they dialled, each answer the same bytes as a direct request to that
 * worker gets; the result cache still hits; a client leaving mid-request frees the worker at once;
 * and a worker SIGKILLed mid-request gives 502 WORKER_LOST without a second worker seeing it.
 */
import assert from "node:assert/strict";
import { Packr } from "msgpackr/pack";
import { Unpackr } from "msgpackr/unpack";
import { json, type Proc, startRouterProc, startWorkerProc, stopAll } from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";
import { base64, picture } from "../../vision/helpers.ts";

const packr = new Packr({ useRecords: false });
const unpackr = new Unpackr({ mapsAsObjects: false, useRecords: false });

/** Timing headers differ from one run to the next; every other header must be the same. */
const TIMING = /^x-(total|queue|tokenization|inference|postprocessing)-time$/;

/** A request as the test sends it, to the worker directly and through the router. */
interface Case {
  name: string;
  path: string;
  type: "application/json" | "application/msgpack";
  body: Uint8Array<ArrayBuffer>;
}

function jsonCase(name: string, path: string, body: unknown): Case {
  return {
    name,
    path,
    type: "application/json",
    body: new TextEncoder().encode(JSON.stringify(body)),
  };
}

/** Status, headers (timing left out) and body bytes of `url`'s answer to `c`. */
async function answer(url: string, c: Case, extra: Record<string, string> = {}) {
  const res = await fetch(url + c.path, {
    method: "POST",
    headers: { "content-type": c.type, accept: c.type, "x-trace-id": "same-trace", ...extra },
    body: c.body,
    signal: AbortSignal.timeout(120_000),
  });
  const body = new Uint8Array(await res.arrayBuffer());
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (!TIMING.test(k) && k !== "content-length") headers[k] = v;
  });
  // The length follows the timing digits in the body: it must be the body's own.
  assert.equal(res.headers.get("content-length"), String(body.length));
  return { status: res.status, headers, body, cache: res.headers.get("x-svc-cache") };
}

/** A closed port on 127.0.0.1 (bound, then released). */
function closedPort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Transport of each worker, per the router's /health. */
async function transports(routerUrl: string): Promise<Record<string, string>> {
  const h = await json(`${routerUrl}/health`);
  const out: Record<string, string> = {};
  for (const w of (h.body.workers ?? []) as { id: string; transport: string }[]) {
    out[w.id] = w.transport;
  }
  return out;
}

Deno.test({
  name: "e2e: workers with no reachable URL serve through the connection they dialled",
  fn: async (t) => {
    const procs: Proc[] = [];
    try {
      const r = await startRouterProc("router-conn", {
        SVC_MACHINE_PROFILES: "cpu,l4,h100",
        SVC_STATUS_INTERVAL_MS: "200",
        SVC_HEARTBEAT_INTERVAL_MS: "200",
      });
      procs.push(r.proc);
      // One 31 MB text: the worker's default string bound (100 000 characters) is raised for it.
      const big = { SVC_MAX_STRING_LENGTH: "32000000" };
      const workers = {
        cpu: await startWorkerProc("conn-closed", r.url, {
          ...big,
          SVC_MACHINE_PROFILE: "cpu",
          SVC_ADVERTISE_URL: `http://127.0.0.1:${closedPort()}`,
          SVC_PRELOAD_MODELS: "fixture/dense",
          // Small runs: a client that leaves waits out at most one short run.
          SVC_MAX_RUN_TOKENS: "128",
        }),
        l4: await startWorkerProc("conn-none", r.url, { ...big, SVC_MACHINE_PROFILE: "l4" }),
      };
      // No HTTP port at all: it can be reached only over its connection.
      const portless = await startWorkerProc("conn-portless", r.url, {
        SVC_MACHINE_PROFILE: "h100",
        SVC_WORKER_HTTP: "off",
        SVC_SHUTDOWN_DRAIN_S: "1",
      });
      procs.push(workers.cpu, workers.l4, portless);
      const direct: Record<string, string> = {};
      for (const [profile, w] of Object.entries(workers)) {
        const port = (await w.waitForLine(/worker listening .*port=(\d+)/, 60_000))[1];
        direct[profile] = `http://127.0.0.1:${port}`;
      }
      await waitFor(
        async () => Object.keys(await transports(r.url)).length === 3,
        "the workers registered",
        90_000,
      );

      await t.step("/health shows each worker's transport", async () => {
        assert.deepEqual(await transports(r.url), {
          "conn-closed": "connection",
          "conn-none": "connection",
          "conn-portless": "connection",
        });
      });

      const jpeg = base64(await picture(96, 64, "jpeg"));
      const cases: Case[] = [
        jsonCase("encode json", "/v1/encode/fixture%2Fdense", {
          items: [{ id: "a", text: "hello world" }, { id: "b", text: "a second item" }],
        }),
        {
          name: "encode msgpack",
          path: "/v1/encode/fixture%2Fdense",
          type: "application/msgpack",
          body: new Uint8Array(packr.pack({ items: [{ id: "m", text: "packed text" }] })),
        },
        jsonCase("score", "/v1/score/fixture%2Freranker", {
          query: { text: "what is a cat" },
          items: [{ text: "a cat is an animal" }, { text: "the stock market" }],
        }),
        jsonCase("extract", "/v1/extract/fixture%2Fgliner", {
          items: [{ text: "Alice lives in Paris and works for Acme." }],
          params: { labels: ["person", "location", "organization"] },
        }),
        jsonCase("image", "/v1/encode/fixture%2Fclip", {
          items: [{ id: "img", images: [{ data: jpeg, format: "jpeg" }] }],
        }),
        jsonCase("embeddings", "/v1/embeddings", {
          model: "fixture/dense",
          input: ["one", "two"],
          encoding_format: "float",
        }),
        jsonCase("cohere rerank", "/v2/rerank", {
          model: "fixture/reranker",
          query: "q",
          documents: ["first doc", "second doc"],
        }),
        jsonCase("31 MB encode", "/v1/encode/fixture%2Fdense", {
          items: [{ id: "big", text: "lorem ipsum ".repeat(2_583_000) }],
        }),
      ];

      for (const [profile, base] of Object.entries(direct)) {
        await t.step(`same bytes through the router as direct (${profile})`, async () => {
          for (const c of cases) {
            const started = performance.now();
            const want = await answer(base, c);
            if (c.body.length > 1e6) {
              console.log(`${c.name}: ${(performance.now() - started).toFixed(0)} ms direct`);
            }
            const got = await answer(r.url, c, { "x-svc-machine-profile": profile });
            assert.equal(want.status, 200, `${c.name}: ${new TextDecoder().decode(want.body)}`);
            assert.equal(got.status, want.status, c.name);
            assert.deepEqual(untimed(got.body, c), untimed(want.body, c), `${c.name}: body`);
            const { "x-svc-cache": _c, ...routed } = got.headers;
            // The router's own answer headers are its version headers, as over HTTP.
            for (const k of ["date", "connection", "keep-alive"]) {
              delete routed[k];
              delete want.headers[k];
            }
            assert.deepEqual(routed, want.headers, `${c.name}: headers`);
          }
        });
      }

      await t.step("a worker with no HTTP port serves the same bytes", async () => {
        await portless.waitForLine(/no HTTP port/);
        assert.ok(!portless.lines.some((l) => /worker listening/.test(l)));
        for (const c of cases.slice(0, 2)) {
          const want = await answer(direct.cpu, c);
          const got = await answer(r.url, c, { "x-svc-machine-profile": "h100" });
          assert.equal(got.status, 200, c.name);
          assert.deepEqual(untimed(got.body, c), untimed(want.body, c), c.name);
        }
      });

      await t.step("the result cache still hits", async () => {
        const c = cases[0];
        const first = await answer(r.url, c, { "x-svc-machine-profile": "cpu" });
        const again = await answer(r.url, c, { "x-svc-machine-profile": "cpu" });
        assert.equal(again.cache, "hit");
        assert.deepEqual(again.body, first.body);
      });

      await t.step("a client leaving mid-request frees the worker's queue within 1 s", async () => {
        // Long inputs keep the worker busy; the clients go away while they are queued.
        const heavy = jsonCase("heavy", "/v1/encode/fixture%2Fdense", {
          items: Array.from({ length: 256 }, (_, i) => ({ text: `item ${i} `.repeat(400) })),
        });
        const gone = Array.from({ length: 4 }, () => {
          const ac = new AbortController();
          const p = fetch(r.url + heavy.path, {
            method: "POST",
            headers: { "content-type": heavy.type, "x-svc-machine-profile": "cpu" },
            body: heavy.body,
            signal: ac.signal,
          }).catch(() => {});
          return { ac, p };
        });
        await waitFor(
          async () => (await workerQueue(direct.cpu)) > 0,
          "the heavy requests to be queued",
          20_000,
        );
        const left = performance.now();
        for (const g of gone) g.ac.abort();
        await Promise.all(gone.map((g) => g.p));
        await waitFor(async () => (await workerQueue(direct.cpu)) === 0, "the queue to empty", {
          timeoutMs: 5000,
          everyMs: 20,
        });
        const ms = performance.now() - left;
        console.log(`worker queue empty ${ms.toFixed(0)} ms after the clients left`);
        assert.ok(ms < 1000, `${ms.toFixed(0)} ms`);
      });

      await t.step(
        "a worker stopping mid-request answers 503 SHUTTING_DOWN over its link",
        async () => {
          // Work past its drain bound (1 s): cut off with the 503 a router retries elsewhere,
          // which must go out over the connection before the worker closes it.
          const heavy = jsonCase("heavy", "/v1/encode/fixture%2Fdense", {
            items: Array.from({ length: 1024 }, (_, i) => ({ text: `stop ${i} `.repeat(400) })),
          });
          const pending = answer(r.url, heavy, { "x-svc-machine-profile": "h100" });
          // It has no port: the router's view of its queue says when the request is there.
          await waitFor(
            async () => {
              const h = await json(`${r.url}/health`);
              const w = (h.body.workers as { id: string; queue_depth: number }[])
                .find((x) => x.id === "conn-portless");
              return (w?.queue_depth ?? 0) > 0;
            },
            "the request to reach the portless worker",
            { timeoutMs: 20_000, everyMs: 50 },
          );
          portless.signal("SIGTERM");
          const got = await pending;
          const text = new TextDecoder().decode(got.body);
          assert.equal(got.status, 503, text);
          assert.equal(JSON.parse(text).detail.code, "SHUTTING_DOWN");
          assert.equal((await portless.status).code, 0);
        },
      );

      await t.step("SIGKILL mid-request: 502 WORKER_LOST, not sent to another worker", async () => {
        const heavy = jsonCase("heavy", "/v1/encode/fixture%2Fdense", {
          items: Array.from({ length: 256 }, (_, i) => ({ text: `kill ${i} `.repeat(400) })),
        });
        const pending = answer(r.url, heavy, { "x-svc-machine-profile": "l4" });
        await waitFor(
          async () => (await workerQueue(direct.l4)) > 0,
          "the request to reach the worker",
          20_000,
        );
        const before = await served(direct.cpu);
        await workers.l4.kill();
        const got = await pending;
        assert.equal(got.status, 502, new TextDecoder().decode(got.body));
        assert.equal(JSON.parse(new TextDecoder().decode(got.body)).detail.code, "WORKER_LOST");
        assert.equal(await served(direct.cpu), before, "the other worker never saw it");
      });
    } finally {
      await stopAll(procs);
    }
  },
});

/** An answer's body with its `timing` (which differs per run) left out, re-encoded as it came. */
function untimed(body: Uint8Array, c: Case): Uint8Array {
  if (c.type === "application/json") {
    const text = new TextDecoder().decode(body);
    return new TextEncoder().encode(text.replace(/"timing":\{[^}]*\}/g, '"timing":{}'));
  }
  const value = unpackr.unpack(body) as Map<unknown, unknown>;
  value.delete("timing");
  return new Uint8Array(packr.pack(value));
}

/** Items queued or running on a worker (its /metrics). */
async function workerQueue(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let n = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("svc_queue_depth{")) n += Number(line.split(" ").pop());
  }
  return n;
}

/** Requests a worker answered so far (its /metrics). */
async function served(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let n = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("svc_requests_total{")) n += Number(line.split(" ").pop());
  }
  return n;
}
