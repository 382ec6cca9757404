/**
 * Deno KV operations of routers in KV mode (docs/fleet.md, "Several routers"): 4 router
 * instances (the worker directory and the demand and drain feeds of each, with a counting
 * wrapper per instance over one database), 300
 * simulated workers of 30 models each spread over them, one status frame per worker per second.
 * At rest nothing changes; under load every frame carries new load figures and each worker's
 * model states change once every 30 s. Prints KV operations per second for each phase.
 *
 *   deno task bench:kv-fleet [--seconds=30] [--workers=300] [--models=30] [--instances=4]
 */
import { parseArgs } from "node:util";
import { silentLogger } from "@svc/shared/log";
import { KvWorkerDirectory } from "#router/directory/kv.ts";
import { KvDemand } from "#router/kv/demand.ts";
import { KvDrains } from "#router/kv/drains.ts";
import type { WorkerModel, WorkerRecord } from "#router/directory/types.ts";
import { countingKv, type KvCounts, zeroCounts } from "../helpers/kv_count.ts";

const USAGE = "usage: npx deno task bench:kv-fleet [--seconds=30] [--workers=300] [--models=30] " +
  "[--instances=4]\n\nKV operations per second of the KV directory at rest and under load " +
  "(in-process, one database, default settings: poll 500 ms, renewal 10 s, stale 3 s).";

/** The figures of one phase, per second, all instances together. */
export interface PhaseRates {
  reads: number;
  listed: number;
  commits: number;
  mutations: number;
}

/** Registration time of the simulated workers (a connection keeps its own). */
const REGISTERED_AT = Date.now();

function record(w: number, inst: number, models: WorkerModel[], now: number): WorkerRecord {
  return {
    id: `w-${w}`,
    conn_id: `c-${w}`,
    router_id: `r-${inst}`,
    url: `http://10.0.${w >> 8}.${w & 255}:8080`,
    machine_profile: "l4",
    pool: "l4",
    bundle: "default",
    version: "0.1.0",
    gpu_count: 1,
    gpu_types: ["l4"],
    models,
    queue_depth: 0,
    in_flight: 0,
    memory_used_bytes: 1 << 30,
    memory_total_bytes: 24 << 30,
    draining: false,
    registered_at: REGISTERED_AT,
    last_seen: now,
  };
}

function sum(cs: KvCounts[]): KvCounts {
  const t = zeroCounts();
  for (const c of cs) {
    for (const k of Object.keys(t) as (keyof KvCounts)[]) t[k] += c[k];
  }
  return t;
}

function rates(a: KvCounts, b: KvCounts, seconds: number): PhaseRates {
  return {
    reads: (b.gets + b.lists - a.gets - a.lists) / seconds,
    listed: (b.listed - a.listed) / seconds,
    commits: (b.commits - a.commits) / seconds,
    mutations: (b.mutations - a.mutations) / seconds,
  };
}

/** Run both phases; resolves with their rates. */
export async function measure(opts: {
  seconds: number;
  workers: number;
  models: number;
  instances: number;
}): Promise<{ rest: PhaseRates; load: PhaseRates }> {
  const raw = await Deno.openKv(":memory:");
  const wrapped = Array.from({ length: opts.instances }, () => countingKv(raw));
  const dirs = wrapped.map(({ kv }, i) =>
    new KvWorkerDirectory({
      kv,
      prefix: "bench",
      staleMs: 3000,
      refreshMs: 500,
      renewMs: 10_000,
      routerId: `r-${i}`,
      log: silentLogger,
    })
  );
  // What else a router in KV mode keeps open: the demand and drain feeds (idle here).
  const feeds = wrapped.flatMap(({ kv }) => [
    new KvDemand({ kv, prefix: "bench", windowS: 600, pollMs: 500, log: silentLogger }),
    new KvDrains({
      kv,
      prefix: "bench",
      pollMs: 500,
      carryOut: () => Promise.resolve(false),
      log: silentLogger,
    }),
  ]);
  const lists = Array.from(
    { length: opts.workers },
    () =>
      Array.from({ length: opts.models }, (_, m): WorkerModel => ({
        name: `org/model-${m}`,
        bundle: "default",
        state: m < 3 ? "loaded" : "available",
        queue_depth: 0,
      })),
  );
  const inst = (w: number) => w % opts.instances;
  try {
    for (let w = 0; w < opts.workers; w++) {
      await dirs[inst(w)].claim(record(w, inst(w), lists[w], Date.now()));
    }
    let load = false;
    let tick = 0;
    // One status frame per worker per second, spread over the second as real frames are.
    const timer = setInterval(() => {
      tick++;
      for (let w = tick % 10; w < opts.workers; w += 10) {
        const now = Date.now();
        const r = record(w, inst(w), lists[w], now);
        if (load) {
          r.in_flight = (tick + w) % 7;
          r.queue_depth = (tick * 3 + w) % 5;
          // Each worker loads or unloads a model once every 30 s.
          const second = Math.floor(tick / 10);
          if (second % 30 === w % 30) {
            const m = (second + w) % opts.models;
            lists[w] = lists[w].map((x, i) =>
              i === m ? { ...x, state: x.state === "loaded" ? "available" : "loaded" } : x
            );
            r.models = lists[w];
          }
        }
        dirs[inst(w)].put(r).catch(() => {});
      }
    }, 100);
    const phase = async (): Promise<PhaseRates> => {
      // Settle one renewal period, then count over the phase.
      await new Promise((r) => setTimeout(r, 2000));
      const before = sum(wrapped.map((x) => ({ ...x.counts })));
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, opts.seconds * 1000));
      const s = (performance.now() - t0) / 1000;
      return rates(before, sum(wrapped.map((x) => x.counts)), s);
    };
    const rest = await phase();
    load = true;
    const loaded = await phase();
    clearInterval(timer);
    return { rest, load: loaded };
  } finally {
    for (const d of dirs) await d.close();
    for (const f of feeds) await f.close();
    raw.close();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    strict: true,
    options: {
      seconds: { type: "string", default: "30" },
      workers: { type: "string", default: "300" },
      models: { type: "string", default: "30" },
      instances: { type: "string", default: "4" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    Deno.exit(0);
  }
  const n = (s: string, name: string) => {
    const v = Number(s);
    if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be a positive integer`);
    return v;
  };
  const opts = {
    seconds: n(values.seconds, "seconds"),
    workers: n(values.workers, "workers"),
    models: n(values.models, "models"),
    instances: n(values.instances, "instances"),
  };
  const { rest, load } = await measure(opts);
  const row = (name: string, r: PhaseRates) =>
    `| ${name} | ${r.reads.toFixed(1)} | ${r.listed.toFixed(0)} | ${r.commits.toFixed(1)} | ${
      r.mutations.toFixed(1)
    } |`;
  console.log(
    `${opts.workers} workers × ${opts.models} models, ${opts.instances} instances, ` +
      `${opts.seconds} s per phase; KV operations per second, all instances together:\n`,
  );
  console.log("| phase | reads (get + list) | entries listed | commits | mutations |");
  console.log("|---|---|---|---|---|");
  console.log(row("at rest", rest));
  console.log(row("under load", load));
}
