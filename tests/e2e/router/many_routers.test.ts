/**
 * End to end: three routers on one KV file, two workers that list all three in SVC_ROUTER_URL
 * (one over HTTP, one connection-only with no port at all). Every router serves both; SIGKILL of
 * the first router under four clients: no 202 for the served pools, at most 1 % retryable 5xx,
 * and both pools keep serving (the other routers hold sockets of their own to each worker).
 */
import assert from "node:assert/strict";
import { encode, json, Proc, startWorkerProc, stopAll } from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";
import { startThreeTaskRouters } from "../start/tasks.ts";

const MODEL = "fixture/dense";
/** The HTTP worker's pool and the connection-only worker's. */
const POOLS = { cpu: "http-w", gpu: "conn-w" } as const;
type Pool = keyof typeof POOLS;

/** One request's outcome (status 0: the router could not be reached). */
interface Outcome {
  pool: Pool;
  status: number;
  worker: string | null;
  /** performance.now() at the answer. */
  at: number;
  ms: number;
}

/** Encode once through `url` for `pool`; the body is read (or dropped) before returning. */
async function request(url: string, pool: Pool, text: string): Promise<Outcome> {
  const t0 = performance.now();
  const res = await encode(url, MODEL, { "X-SVC-MACHINE-PROFILE": pool }, [text]).catch(() =>
    undefined
  );
  await res?.body?.cancel();
  const at = performance.now();
  return {
    pool,
    status: res?.status ?? 0,
    worker: res?.headers.get("x-svc-worker-id") ?? null,
    at,
    ms: at - t0,
  };
}

Deno.test({
  name: "e2e: many routers serve every worker, and losing one loses none",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "e2e-many-routers-" });
    const env = {
      SVC_DIRECTORY: "kv",
      SVC_KV_PATH: `${dir}/fleet.kv`,
      SVC_KV_REFRESH_MS: "200",
      SVC_EXPOSE_WORKER_ID: "1", // which worker answered is what the test checks
      SVC_MACHINE_PROFILES: "cpu,gpu",
      // Off: every request goes to a worker (a cache hit would hide the path under test).
      SVC_RESULT_CACHE_BYTES: "0",
    };
    const procs: Proc[] = [];
    try {
      const routers = await startThreeTaskRouters(env, procs);
      const [a, b, c] = routers;
      const all = routers.map((r) => r.url).join(",");
      const workers = {
        cpu: await startWorkerProc(POOLS.cpu, all, {
          SVC_MACHINE_PROFILE: "cpu",
          SVC_WORKER_TRANSPORT: "http",
        }),
        gpu: await startWorkerProc(POOLS.gpu, all, {
          SVC_MACHINE_PROFILE: "gpu",
          SVC_WORKER_HTTP: "off",
        }),
      };
      procs.push(workers.cpu, workers.gpu);
      // Each worker holds a socket to each router (a registration refused while the shared KV
      // file is locked by another router is dialled again).
      const ports = routers.map((r) => new URL(r.url).port);
      for (const w of Object.values(workers)) {
        await waitFor(
          () =>
            ports.every((p) =>
              w.lines.some((l) => l.includes("registered with the router") && l.includes(`:${p}/`))
            ),
          `${w.name} registered with every router`,
          60_000,
        );
      }
      // Every router serves both pools (the first request loads the model).
      for (const pool of ["cpu", "gpu"] as const) {
        for (const r of routers) {
          const got = await request(r.url, pool, `warm ${pool} ${r.url}`);
          assert.equal(got.status, 200, `${pool} through ${r.url}`);
          assert.equal(got.worker, POOLS[pool]);
        }
      }
      // A client spreading requests over the three: every request is served.
      const spread: Outcome[] = [];
      for (let i = 0; i < 30; i++) {
        const pool = i % 2 === 0 ? "cpu" : "gpu";
        spread.push(await request(routers[i % 3].url, pool, `spread ${i}`));
      }
      assert.deepEqual(spread.filter((o) => o.status !== 200), []);
      const median = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)];
      for (const pool of ["cpu", "gpu"] as const) {
        const ms = median(spread.filter((o) => o.pool === pool).map((o) => o.ms));
        console.log(`  ${POOLS[pool]}: median ${ms.toFixed(1)} ms through any router`);
      }

      // Four clients on the surviving routers (a balancer stops sending to a dead one); the
      // workers dialled router A first, which is killed in the middle.
      let stop = false;
      const load: Outcome[] = [];
      const client = async (k: number) => {
        for (let i = 0; !stop; i++) {
          const pool = (i + k) % 2 === 0 ? "cpu" : "gpu";
          load.push(await request([b, c][(i + k) % 2].url, pool, `load ${k} ${i}`));
        }
      };
      const traffic = Promise.all([0, 1, 2, 3].map(client));
      await waitFor(() => load.length >= 20, "traffic before the kill");
      const killedAt = performance.now();
      a.proc.signal("SIGKILL");
      await a.proc.status;
      // Long enough for A's records to go stale everywhere (SVC_WORKER_STALE_MS, 3 s).
      await new Promise((r) => setTimeout(r, 3_500));
      stop = true;
      await traffic;
      const after = load.filter((o) => o.at > killedAt);
      const by = (s: (o: Outcome) => boolean) => load.filter(s).length;
      console.log(
        `  under the kill: ${load.length} requests (${after.length} after it), ` +
          `${by((o) => o.status === 202)} × 202, ${by((o) => o.status >= 500)} × 5xx`,
      );
      assert.equal(by((o) => o.status === 202), 0, "no 202 for a served pool");
      assert.ok(by((o) => o.status >= 500) <= load.length / 100, "at most 1 % 5xx");
      assert.equal(by((o) => o.status === 0), 0, "every surviving router answers");
      // Each pool served again within 2 s of the kill, and until the end.
      for (const pool of ["cpu", "gpu"] as const) {
        const served = after.filter((o) => o.pool === pool && o.status === 200);
        assert.ok(served.length > 0, `${pool} served after the kill`);
        let prev = killedAt;
        let gap = 0;
        for (const o of served.sort((x, y) => x.at - y.at)) {
          gap = Math.max(gap, o.at - prev);
          prev = o.at;
        }
        console.log(`  ${POOLS[pool]}: longest gap after the kill ${gap.toFixed(0)} ms`);
        assert.ok(gap < 2_000, `${pool}: ${gap.toFixed(0)} ms without an answer`);
        assert.ok(served.every((o) => o.worker === POOLS[pool]));
      }
      for (const r of [b, c]) {
        assert.equal((await json(`${r.url}/health`)).body.worker_count, 2, `${r.url} after`);
      }
    } finally {
      await stopAll(procs);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
