/**
 * `deno task bench:fleet`: what holding a fleet costs the router. A real router process (as
 * `deno task router` starts it, default settings) and one or two load processes of simulated
 * workers (tests/bench/fleet_load.ts: real sockets, token, id proofs, 30 models each, a status
 * frame a second, a ping every 500 ms). For each fleet size, after a warm-up, it reads the
 * router's CPU time from /proc/<pid>/stat (user + system: not wall clock, so a shared machine's
 * other work hardly moves it), its RSS, `/healthz` p50/p99 (probed every 100 ms: the probes cost
 * the router CPU too, which `--workers=0` shows) and `/health`'s time (median of 5).
 *
 *   deno task bench:fleet [--workers=100,300,1000] [--seconds=20] [--warmup=5] [--models=30]
 *     [--busy=0.1] [--deltas=off] [--rounds=1] [--probe-ms=100] [--env=SVC_X=1,SVC_Y=2]
 *     [--cpu-prof=DIR] [--verbose]
 */
import { cpuMs } from "./cpu_time.ts";
import { routerV8Flags } from "./procs.ts";
import { rssMiB, timeGet } from "../hardening/helpers.ts";

const USAGE = `usage: npx deno task bench:fleet [--workers=100,300,1000] [--seconds=20]
  [--warmup=5] [--models=30] [--busy=0.1] [--deltas=off] [--rounds=1] [--probe-ms=100]
  [--env=SVC_X=v,...] [--cpu-prof=DIR] [--verbose]

Simulated workers (one or two load processes) against a real router process at its default
settings; prints, per fleet size, the router's CPU per worker-second (from /proc), RSS, /healthz
p50/p99 and /health's time. --busy: share of status frames in which a model's queue moves;
--deltas=off: full status frames (workers of earlier releases); --env: extra router settings;
--workers=0: the router idle with the same probes (their own cost); --verbose: show the
processes' stderr.`;

if (Deno.args.includes("--help") || Deno.args.includes("-h")) {
  console.log(USAGE);
  Deno.exit(0);
}

const ROOT = new URL("../../", import.meta.url).pathname;
const TOKEN = "bench-fleet-worker-token-0123456789";
const SECRET = "bench-fleet-worker-secret-0123456789";

/** `--name=value` arguments. */
function arg(name: string, fallback: string): string {
  const found = Deno.args.find((a) => a.startsWith(`--${name}=`));
  return found ? found.slice(name.length + 3) : fallback;
}

/** A line-reading child process. */
interface Child {
  proc: Deno.ChildProcess;
  /** Resolves with the first stdout match of `re`. */
  waitFor(re: RegExp, ms: number): Promise<RegExpMatchArray>;
}

/** Spawn `args` (deno) and keep reading its stdout so it never blocks on a full pipe. */
function spawn(args: string[], env: Record<string, string>, stdin: "piped" | "null"): Child {
  const proc = new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1", ...env },
    stdin,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let seen = "";
  const waiters: { re: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  const pump = async (stream: ReadableStream<Uint8Array>, echo: boolean) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      if (echo) Deno.stderr.writeSync(new TextEncoder().encode(chunk));
      seen = (seen + chunk).slice(-100_000);
      for (const w of [...waiters]) {
        const m = seen.match(w.re);
        if (m) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(m);
        }
      }
    }
  };
  void pump(proc.stdout, false);
  void pump(proc.stderr, Deno.args.includes("--verbose"));
  return {
    proc,
    waitFor: (re, ms) =>
      new Promise((resolve, reject) => {
        const m = seen.match(re);
        if (m) return resolve(m);
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re}`)), ms);
        waiters.push({
          re,
          resolve: (x) => {
            clearTimeout(timer);
            resolve(x);
          },
        });
      }),
  };
}

/** Percentile `p` (0..1) of sorted `xs`. */
function pct(xs: number[], p: number): number {
  return xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
}

/** One measured fleet size. */
interface Row {
  workers: number;
  seconds: number;
  cpuMs: number;
  coreShare: number;
  msPerWorkerS: number;
  rssMiB: number;
  healthzP50: number;
  healthzP99: number;
  healthMs: number;
  healthBytes: number;
  loadCpuShare: number;
}

const sizes = arg("workers", "100,300,1000").split(",").map(Number);
const seconds = Number(arg("seconds", "20"));
const probeMs = Number(arg("probe-ms", "100"));
const warmup = Number(arg("warmup", "5"));
const rounds = Number(arg("rounds", "1"));
const loadArgs = [
  `--models=${arg("models", "30")}`,
  `--busy=${arg("busy", "0.1")}`,
  `--deltas=${arg("deltas", "on")}`,
];
const extraEnv = Object.fromEntries(
  arg("env", "").split(",").filter(Boolean).map((kv) => [kv.split("=")[0], kv.split("=")[1]]),
);
const cpuProf = arg("cpu-prof", "");
const v8Flags = await routerV8Flags();

const router = spawn(
  [
    "run",
    "-P=router",
    ...(v8Flags ? [`--v8-flags=${v8Flags}`] : []),
    ...(cpuProf ? ["--cpu-prof", `--cpu-prof-dir=${cpuProf}`] : []),
    "router/main.ts",
  ],
  {
    SVC_HOST: "127.0.0.1",
    SVC_PORT: "0",
    SVC_WORKER_TOKEN: TOKEN,
    SVC_WORKER_API_KEY: SECRET,
    SVC_LOG_LEVEL: "info",
    ...extraEnv,
  },
  "null",
);
const port = (await router.waitFor(/port=(\d+)/, 30_000))[1];
const base = `http://127.0.0.1:${port}`;
const rows: Row[] = [];

/** Workers the router lists. */
async function workerCount(): Promise<number> {
  const res = await fetch(`${base}/health`);
  return (await res.json()).worker_count;
}

try {
  for (let round = 0; round < rounds; round++) {
    for (const n of sizes) rows.push(await measure(n));
  }
} finally {
  router.proc.kill("SIGINT");
  await router.proc.status;
}

// The router at rest with the same probes: what the fleet adds is measured above it.
const idle = rows.filter((r) => r.workers === 0);
const idleShare = idle.length ? idle.reduce((a, r) => a + r.coreShare, 0) / idle.length : NaN;
console.log(
  "\n| workers | router CPU (share of a core) | ms CPU per worker-second | above idle | RSS | " +
    "/healthz p50 / p99 | /health | load processes' CPU |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
for (const r of rows) {
  const perWorker = (x: number) => r.workers > 0 && Number.isFinite(x) ? x.toFixed(3) : "–";
  console.log(
    `| ${r.workers} | ${(100 * r.coreShare).toFixed(1)} % | ${perWorker(r.msPerWorkerS)} | ` +
      `${perWorker((1000 * (r.coreShare - idleShare)) / r.workers)} | ` +
      `${r.rssMiB.toFixed(0)} MB | ${r.healthzP50.toFixed(2)} / ${r.healthzP99.toFixed(2)} ms | ` +
      `${r.healthMs.toFixed(1)} ms (${(r.healthBytes / 1024).toFixed(0)} KB) | ` +
      `${(100 * r.loadCpuShare).toFixed(0)} % |`,
  );
}
console.log(JSON.stringify({ seconds, warmup, probeMs, load: loadArgs, env: extraEnv, rows }));

/** Run `n` simulated workers and measure the router while they talk. */
async function measure(n: number): Promise<Row> {
  const procs = n > 200 ? 2 : 1;
  const loads: Child[] = [];
  for (let p = 0; p < procs; p++) {
    const share = Math.floor(n / procs) + (p < n % procs ? 1 : 0);
    const first = p * Math.ceil(n / procs);
    loads.push(spawn(
      [
        "run",
        "-P=tests",
        "tests/bench/fleet_load.ts",
        `--url=ws://127.0.0.1:${port}/fleet/v1/connect`,
        `--workers=${share}`,
        `--first=${first}`,
        ...loadArgs,
      ],
      { FLEET_BENCH_TOKEN: TOKEN, FLEET_BENCH_SECRET: SECRET },
      "piped",
    ));
  }
  try {
    for (const l of loads) await l.waitFor(/registered (\d+)/, 120_000);
    const listed = await workerCount();
    if (listed !== n) throw new Error(`the router lists ${listed} workers, not ${n}`);
    await new Promise((r) => setTimeout(r, warmup * 1000));
    const pid = router.proc.pid;
    const loadBefore = loads.map((l) => cpuMs(l.proc.pid, false) ?? 0);
    const before = cpuMs(pid, false);
    const t0 = performance.now();
    const probes: number[] = [];
    while (performance.now() - t0 < seconds * 1000) {
      probes.push((await timeGet(`${base}/healthz`)).ms);
      await new Promise((r) => setTimeout(r, probeMs));
    }
    const after = cpuMs(pid, false);
    const elapsedS = (performance.now() - t0) / 1000;
    const loadAfter = loads.map((l) => cpuMs(l.proc.pid, false) ?? 0);
    if (before === null || after === null) throw new Error("no /proc CPU times here");
    const healthTimes: number[] = [];
    let healthBytes = 0;
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      const res = await fetch(`${base}/health`);
      healthBytes = (await res.arrayBuffer()).byteLength;
      healthTimes.push(performance.now() - t);
    }
    const used = after - before;
    probes.sort((a, b) => a - b);
    healthTimes.sort((a, b) => a - b);
    const loadCpu = loadAfter.reduce((a, x, i) => a + x - loadBefore[i], 0);
    const row: Row = {
      workers: n,
      seconds: elapsedS,
      cpuMs: used,
      coreShare: used / (elapsedS * 1000),
      msPerWorkerS: used / (n * elapsedS),
      rssMiB: await rssMiB(pid),
      healthzP50: pct(probes, 0.5),
      healthzP99: pct(probes, 0.99),
      healthMs: healthTimes[2],
      healthBytes,
      loadCpuShare: loadCpu / (elapsedS * 1000),
    };
    console.error(
      `${n} workers: router ${(100 * row.coreShare).toFixed(1)} % of a core, ` +
        `${row.msPerWorkerS.toFixed(3)} ms per worker-second, RSS ${row.rssMiB.toFixed(0)} MB, ` +
        `/healthz p99 ${row.healthzP99.toFixed(2)} ms, /health ${row.healthMs.toFixed(1)} ms`,
    );
    return row;
  } finally {
    for (const l of loads) {
      await l.proc.stdin.close().catch(() => {});
    }
    for (const l of loads) await l.proc.status;
    // The next size starts from an empty fleet.
    for (let i = 0; i < 100 && await workerCount() > 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
