/**
 * End to end: the relay between router instances through KV (issue 34). Three routers on one KV
 * file, started with `deno task router`'s command line; a connection-only worker (no port at all)
 * dials router A alone, as on Deno Deploy, where a worker reaches one isolate. Routers B and C
 * serve it through A: the same status, headers and bytes as through A, a 2 MB body included, with
 * client keys and worker keys on (the worker accepts only its own key, which A adds: a client's
 * never travels through KV); a
 * body over SVC_RELAY_MAX_BODY_BYTES gets a 503 naming the setting (A, holding the socket, serves
 * it); no relay key is left behind.
 */
import assert from "node:assert/strict";
import { encode, json, Proc, startWorkerProc, stopAll } from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";
import { startThreeTaskRouters } from "../start/tasks.ts";

const MODEL = "fixture/dense";
/** A client key, and the fleet's worker secret: each worker accepts only its own derived key. */
const CLIENT_KEY = "relay-client-key-0123";
const WORKER_SECRET = "relay-worker-secret-0123456789abcdef";
const CPU = { "X-SVC-MACHINE-PROFILE": "cpu", authorization: `Bearer ${CLIENT_KEY}` };
/** The relay bound of the routers: a 2 MB body passes, a 4 MB one does not. */
const RELAY_MAX = 3 * 1024 * 1024;

/** What a client can observe of an answer, but for what differs between any two requests. */
interface Seen {
  status: number;
  /** Header names, and the values of those that do not vary. */
  headers: string[];
  /** The body, its `timing` object blanked (the worker's own measure of each request). */
  body: string;
}

/** Headers whose values vary from request to request (timings, ids, lengths of timings). */
const VARYING = /^(date|x-request-id|x-trace-id|content-length|x-.*-time)$/;

async function seen(res: Response): Promise<Seen> {
  const headers: string[] = [];
  res.headers.forEach((v, k) => headers.push(VARYING.test(k) ? k : `${k}: ${v}`));
  const body = (await res.text()).replace(/"timing":\{[^}]*\}/, '"timing":{}');
  return { status: res.status, headers: headers.sort(), body };
}

/** `n` texts of `chars` characters each (distinct, so no answer is another's). */
function texts(n: number, chars: number, tag: string): string[] {
  return Array.from({ length: n }, (_, i) => `${tag} ${i} `.padEnd(chars, "abcdefgh "));
}

Deno.test({
  name: "e2e: a worker connected to one router is served by the others through KV",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "e2e-kv-relay-" });
    const kvPath = `${dir}/fleet.kv`;
    const env = {
      SVC_DIRECTORY: "kv",
      SVC_KV_PATH: kvPath,
      SVC_KV_REFRESH_MS: "200",
      SVC_EXPOSE_WORKER_ID: "1",
      SVC_MACHINE_PROFILES: "cpu",
      // Off: every request goes to the worker (a cache hit would hide the path under test).
      SVC_RESULT_CACHE_BYTES: "0",
      SVC_RELAY_MAX_BODY_BYTES: String(RELAY_MAX),
      SVC_API_KEYS: CLIENT_KEY,
      SVC_WORKER_API_KEY: WORKER_SECRET,
    };
    const procs: Proc[] = [];
    try {
      const routers = await startThreeTaskRouters(env, procs);
      const [a, b, c] = routers;
      // Connection transport, no HTTP server: only A, whose socket it holds, can reach it
      // without the relay.
      const w = await startWorkerProc("relay-w", a.url, {
        SVC_MACHINE_PROFILE: "cpu",
        SVC_WORKER_HTTP: "off",
        SVC_WORKER_API_KEY: WORKER_SECRET,
      });
      procs.push(w);
      for (const r of routers) {
        await waitFor(
          async () => (await json(`${r.url}/health`, { headers: CPU })).body.worker_count === 1,
          `${r.url} sees the worker`,
          60_000,
        );
      }
      const warm = await encode(a.url, MODEL, CPU, ["warm up"]);
      assert.equal(warm.status, 200);
      await warm.body?.cancel();

      // Small requests: the same answer through every router.
      for (const [i, t] of texts(3, 40, "small").entries()) {
        const direct = await seen(await encode(a.url, MODEL, CPU, [t]));
        assert.equal(direct.status, 200);
        for (const r of [b, c]) {
          assert.deepEqual(
            await seen(await encode(r.url, MODEL, CPU, [t])),
            direct,
            `${i} ${r.url}`,
          );
        }
      }
      // A 2 MB body, relayed in chunks both ways.
      const big = texts(100, 20_000, "big");
      assert.ok(JSON.stringify(big).length > 2_000_000);
      const direct = await seen(await encode(a.url, MODEL, CPU, big));
      assert.equal(direct.status, 200, direct.body.slice(0, 300));
      assert.deepEqual(await seen(await encode(b.url, MODEL, CPU, big)), direct, "2 MB via B");

      // Over the relay bound: a clear 503 from B; A serves it over its own socket.
      const huge = texts(200, 20_000, "huge");
      const refused = await encode(c.url, MODEL, CPU, huge);
      assert.equal(refused.status, 503);
      const detail = (await refused.json()).detail;
      assert.equal(detail.code, "NO_CAPACITY");
      assert.match(detail.message, /SVC_RELAY_MAX_BODY_BYTES/);
      const served = await encode(a.url, MODEL, CPU, huge);
      assert.equal(served.status, 200);
      await served.body?.cancel();

      // What the relay hop adds, as this machine sees it (reported, not asserted).
      const median = async (url: string) => {
        const ms: number[] = [];
        for (let i = 0; i < 15; i++) {
          const t0 = performance.now();
          const res = await encode(url, MODEL, CPU, [`latency ${i}`]);
          await res.body?.cancel();
          assert.equal(res.status, 200);
          ms.push(performance.now() - t0);
        }
        return ms.sort((x, y) => x - y)[7];
      };
      const [held, relayed] = [await median(a.url), await median(b.url)];
      console.log(`  median: ${held.toFixed(1)} ms via A, ${relayed.toFixed(1)} ms relayed via B`);

      // Every relay key is deleted once read (the bells, counters, stay).
      const kv = await Deno.openKv(kvPath);
      try {
        await waitFor(async () => {
          for await (const e of kv.list({ prefix: ["svc", "relay"] })) {
            if (e.key[2] !== "bell") return false;
          }
          return true;
        }, "no relay keys left");
      } finally {
        kv.close();
      }
    } finally {
      await stopAll(procs);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
