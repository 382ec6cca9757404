/**
 * What the result cache adds to a request that misses, and what a hit costs, in process:
 *
 * 1. The cache's own work per request (key, lookup, flight, capture; no HTTP), in µs: a miss of
 *    a small encode, and a hit.
 * 2. Whole requests through an in-process router to an in-process fake worker, closed loop,
 *    every body different (all misses), the cache on and off in interleaved rounds: requests/s.
 *    Both processes share this one, so the rates are for comparison only.
 *
 *   deno run -P=tests tests/bench/result_cache_path.ts [--rounds=5] [--seconds=3]
 */
import { parseArgs } from "node:util";
import { resultKey } from "#router/cache/key.ts";
import { ResultStore } from "#router/cache/store.ts";
import { Flights } from "#router/cache/flights.ts";
import { captureAnswer } from "#router/cache/capture.ts";
import { downstreamHeaderPairs, downstreamHeaders } from "#router/proxy/headers.ts";
import type { WorkerAnswer } from "#router/proxy/forward.ts";
import { startFakeWorker } from "../router/helpers/fake_worker.ts";
import { startTestRouter, TEST_TOKEN } from "../router/helpers/router.ts";
import { waitFor } from "../helpers/wait.ts";

/** `--rounds=N --seconds=S` (node:util's parser: unknown flags are refused). */
const FLAGS = parseArgs({
  args: Deno.args,
  options: {
    rounds: { type: "string", default: "5" },
    seconds: { type: "string", default: "3" },
  },
  strict: true,
  allowPositionals: false,
}).values;

const REV = "0123456789abcdef0123456789abcdef";
const enc = new TextEncoder();

/** µs per call of `fn` over `n` calls after a warm-up (each call gets a new number). */
function perCall(n: number, fn: (i: number) => void): number {
  for (let i = 0; i < 2000; i++) fn(calls++);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn(calls++);
  return (performance.now() - t0) * 1000 / n;
}
let calls = 0;

function cacheWork(): void {
  const store = new ResultStore({ maxBytes: 1 << 30, maxEntryBytes: 1 << 20, ttlMs: 3_600_000 });
  const flights = new Flights();
  const answerBody = enc.encode(JSON.stringify({ items: [{ dense: new Array(384).fill(0.1) }] }));
  const upstream: WorkerAnswer["headers"] = {
    "content-type": "application/json",
    "content-length": String(answerBody.length),
    "x-total-time": "1.20",
    "x-inference-time": "0.80",
    "x-trace-id": "0123456789abcdef",
    "x-svc-model-revision": REV,
  };
  const parts = {
    tenant: "",
    pool: "cpu",
    method: "POST",
    path: "/v1/encode/fixture%2Fdense",
    contentType: "application/json",
    accept: "application/json",
  };
  const bodyOf = (i: number) => {
    const b = enc.encode(`{"items":[{"text":"a short query to embed number ${i}"}]}`);
    return { chunks: [b], length: b.length };
  };
  const miss = perCall(50_000, (i) => {
    const key = resultKey(parts, bodyOf(i));
    if (store.get(key)) throw new Error("unexpected hit");
    const lead = flights.lead(key)!;
    const pairs = downstreamHeaderPairs(upstream);
    const headers = new Headers(pairs);
    headers.set("x-svc-cache", "miss");
    const answer: WorkerAnswer = {
      kind: "answer",
      status: 200,
      statusText: "OK",
      headers: upstream,
      body: answerBody,
    };
    captureAnswer(answer, headers, 1 << 20, (body) => {
      lead.land({ status: 200, headers: pairs, body: body!, revision: REV, producer: "conn-1" });
      store.set(key, {
        status: 200,
        headers: pairs,
        body: body!,
        revision: REV,
        producer: "conn-1",
      });
    });
  });
  const hit = perCall(50_000, (i) => {
    const key = resultKey(parts, bodyOf(i % 1000));
    const a = store.get(key)!;
    const headers = new Headers(a.headers as [string, string][]);
    headers.set("x-svc-cache", "hit");
    new Response(a.body as Uint8Array<ArrayBuffer>, { status: a.status, headers });
  });
  const keyOnly = perCall(50_000, (i) => resultKey(parts, bodyOf(i)));
  const bodyOnly = perCall(50_000, (i) => bodyOf(i));
  // What a request pays without the cache for the same steps: the answer's headers and Response.
  const plain = perCall(50_000, () => {
    const headers = downstreamHeaders(upstream);
    new Response(answerBody, { status: 200, headers });
  });
  console.log(
    `cache work per request (in process, no HTTP): key ${(keyOnly - bodyOnly).toFixed(1)} µs; ` +
      `miss (key, lookup, flight, capture, store, answer) ${(miss - bodyOnly).toFixed(1)} µs ` +
      `against ${plain.toFixed(1)} µs for the answer without the cache; ` +
      `hit (key, lookup, answer) ${(hit - bodyOnly).toFixed(1)} µs`,
  );
}

async function throughput(rounds: number, seconds: number): Promise<void> {
  const routers = {
    on: await startTestRouter({ SVC_LOG_LEVEL: "error" }),
    off: await startTestRouter({ SVC_LOG_LEVEL: "error", SVC_RESULT_CACHE_BYTES: "0" }),
  };
  const workers = Object.values(routers).map((r, i) =>
    startFakeWorker({
      routerUrl: r.url,
      token: TEST_TOKEN,
      id: `w${i}`,
      profile: "cpu",
      models: [{ name: "fixture/dense", state: "loaded", revision: REV }],
    })
  );
  try {
    await waitFor(() => workers.every((w) => w.link.connected), "workers");
    const trim = setInterval(() => workers.forEach((w) => w.requests.length = 0), 200);
    let n = 0;
    const run = async (url: string) => {
      const until = performance.now() + seconds * 1000;
      let done = 0;
      await Promise.all(Array.from({ length: 16 }, async () => {
        while (performance.now() < until) {
          const res = await fetch(`${url}/v1/encode/fixture%2Fdense`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-svc-machine-profile": "cpu" },
            body: `{"items":[{"text":"query ${n++}"}]}`,
          });
          await res.arrayBuffer();
          done++;
        }
      }));
      return done / seconds;
    };
    const rates: Record<string, number[]> = { on: [], off: [] };
    for (let r = 0; r < rounds; r++) {
      for (const mode of (r % 2 ? ["off", "on"] : ["on", "off"]) as ("on" | "off")[]) {
        rates[mode].push(await run(routers[mode].url));
      }
    }
    clearInterval(trim);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      `misses through the router (16 clients, ${rounds} interleaved rounds of ${seconds} s, ` +
        `median): cache on ${median(rates.on).toFixed(0)} requests/s, off ${
          median(rates.off).toFixed(0)
        } requests/s (rounds on ${rates.on.map((x) => x.toFixed(0))}; off ${
          rates.off.map((x) => x.toFixed(0))
        })`,
    );
  } finally {
    for (const w of workers) await w.close();
    for (const r of Object.values(routers)) await r.close();
  }
}

cacheWork();
await throughput(Number(FLAGS.rounds), Number(FLAGS.seconds));
