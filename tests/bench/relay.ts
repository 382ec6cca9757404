/**
 * What each path from a router to a worker adds (docs/fleet.md, "Which path, and what it adds"),
 * at concurrency 1, against fake workers that answer at once (so the figures are the router's and
 * the path's, not inference): router A holds the sockets of two workers that dial it alone, a
 * connection-only one and one over HTTP (advertised URL); router B holds none. Paths:
 *
 * - `local connection`: the connection-only worker through A (its socket);
 * - `HTTP`: the HTTP worker through B (to its advertised URL);
 * - `relay`: the connection-only worker through B (relayed through KV to A).
 *
 * Two set-ups: `file`, A and B router processes on one KV file (`deno task router`'s command
 * line; watches do not cross processes, so the relay polls: SVC_RELAY_POLL_MS), and `memory`,
 * both routers in this process on one in-memory KV (watches see every write). Prints p50 and p95.
 *
 *   deno task bench:relay [--requests=300] [--poll-ms=25] [--setups=file,memory]
 */
import { parseArgs } from "node:util";
import { quantile } from "./stats.ts";
import { type SocketWorker, startSocketWorker } from "../router/helpers/socket_worker.ts";
import { startTestRouter, TEST_TOKEN } from "../router/helpers/router.ts";
import { startTaskRouter } from "../e2e/start/tasks.ts";
import { E2E_TOKEN, type Proc, stopAll } from "../e2e/procs.ts";
import { waitFor } from "../helpers/wait.ts";

const USAGE = "usage: deno task bench:relay [--requests=300] [--poll-ms=25] " +
  "[--setups=file,memory]\n\nWhat each path from a router to a worker adds (local connection, " +
  "HTTP, KV relay), at concurrency 1, against fake workers that answer at once.";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    requests: { type: "string", default: "300" },
    "poll-ms": { type: "string", default: "25" },
    setups: { type: "string", default: "file,memory" },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  console.log(USAGE);
  Deno.exit(0);
}
const REQUESTS = Number(values.requests);
const POLL_MS = values["poll-ms"];

/** One set-up's two routers, and how to stop them. */
interface Setup {
  a: string;
  b: string;
  token: string;
  stop(): Promise<void>;
}

const ENV = {
  SVC_DIRECTORY: "kv",
  SVC_MACHINE_PROFILES: "conn,http",
  SVC_RESULT_CACHE_BYTES: "0",
  SVC_RELAY_POLL_MS: POLL_MS,
};

async function fileSetup(): Promise<Setup> {
  const dir = await Deno.makeTempDir({ prefix: "bench-relay-" });
  const env = { ...ENV, SVC_KV_PATH: `${dir}/fleet.kv`, SVC_KV_REFRESH_MS: "200" };
  const procs: Proc[] = [];
  const urls: string[] = [];
  try {
    for (const name of ["router-a", "router-b"]) {
      const r = await startTaskRouter(name, env);
      procs.push(r.proc);
      urls.push(r.url);
    }
  } catch (err) {
    await stopAll(procs);
    throw err;
  }
  return {
    a: urls[0],
    b: urls[1],
    token: E2E_TOKEN,
    stop: async () => {
      await stopAll(procs);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

async function memorySetup(): Promise<Setup> {
  const kv = await Deno.openKv(":memory:");
  const a = await startTestRouter(ENV, { kv });
  const b = await startTestRouter(ENV, { kv });
  return {
    a: a.url,
    b: b.url,
    token: TEST_TOKEN,
    stop: async () => {
      await b.close();
      await a.close();
      kv.close();
    },
  };
}

const BODY = JSON.stringify({ items: [{ text: "a short text to embed" }] });
/** A 2 MB body (the fake workers count its bytes; no model reads it). */
const BIG = JSON.stringify({ items: [{ text: "x".repeat(2_000_000) }] });
/** Requests with the 2 MB body per path (a tenth of the small ones, at least 5). */
const BIG_REQUESTS = Math.max(5, Math.floor(REQUESTS / 10));

/** One request's wall time in ms (the answer read whole; anything but 200 is fatal). */
async function once(url: string, pool: string, body = BODY): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/encode/fixture%2Fdense`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-svc-machine-profile": pool },
    body,
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${pool} via ${url}: ${res.status}`);
  return performance.now() - t0;
}

async function measure(name: string, setup: Setup): Promise<void> {
  const workers: SocketWorker[] = [];
  try {
    for (const transport of ["connection", "http"] as const) {
      workers.push(
        await startSocketWorker({
          routerUrl: setup.a,
          token: setup.token,
          id: `bench-${transport}`,
          profile: transport === "http" ? "http" : "conn",
          models: [{ name: "fixture/dense", state: "loaded" }],
          transport,
        }),
      );
    }
    const health = async () => (await (await fetch(`${setup.b}/health`)).json()).worker_count;
    await waitFor(async () => (await health()) === 2, "B sees both workers", 30_000);
    const paths = [
      { label: "local connection (A)", url: setup.a, pool: "conn", body: BODY, n: REQUESTS },
      { label: "HTTP (B)", url: setup.b, pool: "http", body: BODY, n: REQUESTS },
      { label: "relay (B to A)", url: setup.b, pool: "conn", body: BODY, n: REQUESTS },
      { label: "local connection, 2 MB", url: setup.a, pool: "conn", body: BIG, n: BIG_REQUESTS },
      { label: "relay, 2 MB", url: setup.b, pool: "conn", body: BIG, n: BIG_REQUESTS },
    ];
    const ms = paths.map(() => [] as number[]);
    for (const p of paths) for (let i = 0; i < 5; i++) await once(p.url, p.pool, p.body); // warm-up
    // Interleaved, so that drift of a busy machine weighs on every path alike.
    for (let i = 0; i < REQUESTS; i++) {
      for (let k = 0; k < paths.length; k++) {
        const p = paths[k];
        if (i < p.n) ms[k].push(await once(p.url, p.pool, p.body));
      }
    }
    console.log(
      `\n${name} (${REQUESTS} requests per path, ${BIG_REQUESTS} of 2 MB, concurrency 1)`,
    );
    console.log("| path | p50 ms | p95 ms | added p50 ms |");
    console.log("| --- | --- | --- | --- |");
    paths.forEach((p, k) => {
      const base = quantile(ms[p.body === BIG ? 3 : 0], 0.5);
      const p50 = quantile(ms[k], 0.5);
      const p95 = quantile(ms[k], 0.95);
      console.log(
        `| ${p.label} | ${p50.toFixed(2)} | ${p95.toFixed(2)} | ${(p50 - base).toFixed(2)} |`,
      );
    });
  } finally {
    for (const w of workers) await w.close();
  }
}

for (const name of values.setups.split(",")) {
  const setup = name === "file" ? await fileSetup() : await memorySetup();
  try {
    await measure(
      name === "file"
        ? `file (router processes, SVC_RELAY_POLL_MS=${POLL_MS})`
        : "memory (one process)",
      setup,
    );
  } finally {
    await setup.stop();
  }
}
