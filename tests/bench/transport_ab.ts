/**
 * `deno run -P=tests tests/bench/transport_ab.ts [REQUESTS] [ROUNDS]`: the router's own cost over
 * each transport, without inference in the way. A router process and two fake workers in this
 * process that answer at once (tests/router/helpers/socket_worker.ts), one taking its requests
 * over its connection (pool cpu), one over HTTP (pool l4). Interleaved blocks of 100 sequential
 * 1-item requests (direct to a fake worker, through the router over each transport), then 64 in
 * flight; prints p50s, the router's CPU per request, and the added p50 over direct. The full
 * bench (`deno task bench`) measures both transports on a real worker.
 */
import { startSocketWorker } from "../router/helpers/socket_worker.ts";
import { E2E_TOKEN, startRouterProc } from "../e2e/procs.ts";
import { cpuMs } from "./cpu_time.ts";

const N = Number(Deno.args[0] ?? 3000);
const ROUNDS = Number(Deno.args[1] ?? 2);
const PATH = "/v1/encode/fixture%2Fdense";
const BODY = new TextEncoder().encode(JSON.stringify({ items: [{ text: "hello world" }] }));

const r = await startRouterProc("ab-router", {
  SVC_MACHINE_PROFILES: "cpu,l4",
  SVC_RESULT_CACHE_BYTES: "0",
});
const fake = (id: string, profile: string, transport: "connection" | "http") =>
  startSocketWorker({
    routerUrl: r.url,
    token: E2E_TOKEN,
    id,
    profile,
    models: [{ name: "fixture/dense", state: "loaded" }],
    transport,
  });
const conn = await fake("ab-conn", "cpu", "connection");
const http = await fake("ab-http", "l4", "http");

/** One request's latency in ms. */
async function one(url: string, profile?: string): Promise<number> {
  const t = performance.now();
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (profile) headers["x-svc-machine-profile"] = profile;
  const res = await fetch(url + PATH, { method: "POST", headers, body: BODY });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`HTTP ${res.status} from ${url}`);
  return performance.now() - t;
}

const kinds: Record<string, () => Promise<number>> = {
  direct: () => one(http.url),
  connection: () => one(r.url, "cpu"),
  http: () => one(r.url, "l4"),
};

/** The router process's CPU time so far, in ms. */
const routerCpuMs = () => cpuMs(r.proc.child.pid, false) ?? NaN;

try {
  for (let ready = false; !ready;) {
    ready = await Promise.all([kinds.connection(), kinds.http()]).then(() => true, () => false);
    if (!ready) await new Promise((res) => setTimeout(res, 200));
  }
  for (let i = 0; i < 100; i++) for (const k in kinds) await kinds[k]();
  const lat: Record<string, number[]> = { direct: [], connection: [], http: [] };
  const cpu: Record<string, number> = { direct: 0, connection: 0, http: 0 };
  for (let block = 0; block < N / 100; block++) {
    const order = block % 2 ? ["http", "connection", "direct"] : ["direct", "connection", "http"];
    for (const k of order) {
      const t0 = routerCpuMs();
      for (let i = 0; i < 100; i++) lat[k].push(await kinds[k]());
      cpu[k] += routerCpuMs() - t0;
    }
  }
  const p50 = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
  for (const k in kinds) {
    console.log(
      `${k.padEnd(10)} p50 ${p50(lat[k]).toFixed(3)} ms, router CPU ` +
        `${Math.round((cpu[k] * 1000) / lat[k].length)} µs/request`,
    );
  }
  for (const k of ["connection", "http"]) {
    console.log(`router added p50 (${k}): ${(p50(lat[k]) - p50(lat.direct)).toFixed(3)} ms`);
  }
  const rate = async (k: string, total: number) => {
    let next = 0;
    const t = performance.now();
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (next++ < total) await kinds[k]();
    }));
    return total / ((performance.now() - t) / 1000);
  };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? ["http", "connection", "direct"] : ["direct", "connection", "http"];
    const out: string[] = [];
    for (const k of order) out.push(`${k} ${Math.round(await rate(k, 4000))}`);
    console.log(`64 in flight, requests/s: ${out.join(", ")}`);
  }
} finally {
  await conn.close();
  await http.close();
  await r.proc.stop();
}
