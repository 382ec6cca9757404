/**
 * `deno task bench:router-soak`: router memory under sustained load, a real router process with
 * the V8 flags it is deployed with, in front of an in-process fake worker. What it measures and
 * the last results: docs/fleet.md, "Router memory".
 *
 *   deno task bench:router-soak [--seconds=60] [--concurrency=32] [--server=node|deno]
 *     [--idle=30] [--v8-flags=...] [--fill-cache]   (`--v8-flags=` empty: V8's defaults)
 */
import { parseArgs } from "node:util";
import { startFakeWorker } from "../router/helpers/fake_worker.ts";
import { rssMiB, timeGet } from "../hardening/helpers.ts";
import { waitFor } from "../helpers/wait.ts";
import { routerV8Flags } from "./procs.ts";

const USAGE =
  `usage: npx deno task bench:router-soak [--seconds=60] [--concurrency=32] [--server=node|deno]

A router process proxies closed-loop 1-item encodes to an in-process fake worker for --seconds at
--concurrency; its resident memory and a /healthz round trip are printed every 5 s. Run it on a
quiet machine.`;

/** The command line (node:util's parser: unknown flags and missing values are refused). */
function flags() {
  try {
    return parseArgs({
      args: Deno.args,
      options: {
        help: { type: "boolean", short: "h" },
        seconds: { type: "string", default: "60" },
        concurrency: { type: "string", default: "32" },
        server: { type: "string", default: "auto" },
        idle: { type: "string", default: "30" },
        "v8-flags": { type: "string" },
        "fill-cache": { type: "boolean", default: false },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    Deno.exit(2);
  }
}
const FLAGS = flags();
if (FLAGS.help) {
  console.log(USAGE);
  Deno.exit(0);
}

const ROOT = new URL("../../", import.meta.url).pathname;
const TOKEN = "bench-soak-worker-token-0123456789";
const SAMPLE_MS = 5000;
const WARMUP_MS = 10_000;

/** Start the router process; resolves with it and its URL once it listens. */
async function startRouter(
  server: string,
  v8Flags: string,
): Promise<{ child: Deno.ChildProcess; url: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-P=router", ...(v8Flags ? [`--v8-flags=${v8Flags}`] : []), "router/main.ts"],
    cwd: ROOT,
    env: {
      NO_COLOR: "1",
      SVC_HOST: "127.0.0.1",
      SVC_PORT: "0",
      SVC_WORKER_TOKEN: TOKEN,
      // Info for the "router listening" line with the port; the rest is read and dropped.
      SVC_LOG_LEVEL: "info",
      SVC_ROUTER_SERVER: server,
    },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  for (;;) {
    const { value, done } = await lines.read();
    if (done) throw new Error("the router exited before listening");
    seen += value;
    const m = seen.match(/port=(\d+)/);
    if (m) {
      (async () => {
        while (!(await lines.read()).done);
      })();
      return { child, url: `http://127.0.0.1:${m[1]}` };
    }
  }
}

/**
 * Closed-loop load until `untilMs`; returns requests answered 200 and others. Every body differs
 * (a counter in the text): each request is proxied, none is answered by the result cache or
 * coalesced with another (the cache is on, as deployed: its keying is part of the cost).
 */
async function load(url: string, concurrency: number, untilMs: number) {
  let ok = 0;
  let other = 0;
  let n = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < untilMs) {
      const body = JSON.stringify({ items: [{ text: `a short text to embed ${n++}` }] });
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", "x-svc-machine-profile": "cpu" },
        body,
      });
      await res.arrayBuffer();
      if (res.status === 200) ok++;
      else other++;
    }
  }));
  return { ok, other };
}

const seconds = Number(FLAGS.seconds);
const concurrency = Number(FLAGS.concurrency);
const server = FLAGS.server;
const idleSeconds = Number(FLAGS.idle);
const v8Flags = FLAGS["v8-flags"] ?? await routerV8Flags();
const fillCache = FLAGS["fill-cache"];
const { child, url } = await startRouter(server, v8Flags);
const worker = startFakeWorker({
  routerUrl: url,
  token: TOKEN,
  id: "soak-worker",
  profile: "cpu",
  models: [{
    name: "fixture/dense",
    state: "loaded",
    revision: fillCache ? "50a450a450a450a450a450a450a450a4" : undefined,
  }],
});
const trim = setInterval(() => worker.requests.length = 0, 500);
try {
  await waitFor(() => worker.link.connected, "the worker to register", 20_000);
  const idleBefore = await rssMiB(child.pid);
  const target = `${url}/v1/encode/fixture%2Fdense`;
  await load(target, concurrency, performance.now() + WARMUP_MS);
  const samples: { t: number; rss: number; healthzMs: number }[] = [];
  const start = performance.now();
  const running = load(target, concurrency, start + seconds * 1000);
  const sample = async () => {
    const h = await timeGet(`${url}/healthz`);
    samples.push({
      t: (performance.now() - start) / 1000,
      rss: await rssMiB(child.pid),
      healthzMs: h.ms,
    });
    const s = samples.at(-1)!;
    console.log(
      `t=${s.t.toFixed(0).padStart(3)} s  rss ${s.rss.toFixed(1)} MB  /healthz ${
        s.healthzMs.toFixed(1)
      } ms`,
    );
  };
  await sample();
  const ticker = setInterval(() => void sample(), SAMPLE_MS);
  const result = await running;
  clearInterval(ticker);
  await sample();
  const first = samples[0].rss;
  const last = samples.at(-1)!.rss;
  const peak = Math.max(...samples.map((s) => s.rss));
  const p = samples.map((s) => s.healthzMs).sort((a, b) => a - b);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const cacheBytes = Number(metrics.match(/^svc_router_cache_bytes (\d+)/m)?.[1] ?? 0);
  await new Promise((r) => setTimeout(r, idleSeconds * 1000));
  const idleAfter = await rssMiB(child.pid);
  console.log(
    `router RSS under load (${server} server, V8 flags ${v8Flags || "none"}, ` +
      `${fillCache ? "every answer stored, " : ""}${concurrency} ` +
      `clients, ${seconds} s, ${(result.ok / seconds).toFixed(0)} requests/s, ${result.other} ` +
      `not 200): idle ${idleBefore.toFixed(1)} MB before; ${first.toFixed(1)} MB after ` +
      `warm-up, ${last.toFixed(1)} MB at the end (${(last - first).toFixed(1)} MB), peak ` +
      `${peak.toFixed(1)} MB; ${idleAfter.toFixed(1)} MB ${idleSeconds} s after the load ` +
      `(${(idleAfter / idleBefore).toFixed(2)}x idle); result cache ` +
      `${(cacheBytes / 1048576).toFixed(1)} MB; /healthz max ${p.at(-1)!.toFixed(1)} ms`,
  );
} finally {
  clearInterval(trim);
  await worker.close();
  child.kill("SIGKILL");
  await child.status;
}
