/**
 * What a result-cache hit costs a client at concurrency 1, against the router's `/healthz` (the
 * cheapest answer the same process gives): a router process with its cache on, one worker process
 * with `fixture/bench-small`, and rounds that alternate 1,000 sequential `/healthz` and 1,000
 * sequential repeats of one encode (every one a hit after the first). Prints each round's p50s and
 * the median of the differences; the bound is 0.5 ms (docs/bench/README.md).
 *
 *   deno task bench:cache-hit [--rounds=6] [--requests=1000]
 */
import { parseArgs } from "node:util";
import { ensureFixtures } from "@svc/fixture-models";
import { quantile } from "./stats.ts";
import {
  BENCH_MODEL,
  PROFILE_HEADER,
  type Service,
  startRouter,
  startWorker,
  waitForFleet,
} from "./services.ts";

/** The hit's p50 may exceed `/healthz`'s by this much. */
export const HIT_OVER_HEALTHZ_BOUND_MS = 0.5;

const USAGE = `usage: npx deno task bench:cache-hit [--rounds=6] [--requests=1000]

A result-cache hit's p50 against the router's /healthz p50 at concurrency 1: a router process with
its cache on and one worker process, rounds alternating sequential /healthz and sequential repeats
of one encode; the bound is ${HIT_OVER_HEALTHZ_BOUND_MS} ms. About a minute; run it on a quiet machine.`;

/** The command line (node:util's parser: unknown flags and missing values are refused). */
function flags(): { help: boolean; rounds: number; requests: number } {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      help: { type: "boolean", short: "h" },
      rounds: { type: "string", default: "6" },
      requests: { type: "string", default: "1000" },
    },
    strict: true,
    allowPositionals: false,
  });
  return {
    help: values.help ?? false,
    rounds: positive("rounds", values.rounds),
    requests: positive("requests", values.requests),
  };
}

function positive(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} takes a positive integer`);
  return n;
}

/** p50 in ms of `n` sequential calls of `one`. */
async function p50(n: number, one: () => Promise<void>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await one();
    times.push(performance.now() - started);
  }
  return quantile(times, 0.5);
}

async function main(): Promise<void> {
  let args;
  try {
    args = flags();
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${USAGE}`);
  }
  if (args.help) {
    console.log(USAGE);
    return;
  }
  const { rounds, requests } = args;
  const fx = await ensureFixtures(undefined, { bench: true });
  const services: Service[] = [];
  try {
    const router = await startRouter(true);
    services.push(router);
    services.push(await startWorker({ fixturesDir: fx, routerUrl: router.url }));
    await waitForFleet(router, 120_000);
    const body = JSON.stringify({ items: [{ text: "what is the capital of france" }] });
    const encodeUrl = `${router.url}/v1/encode/${BENCH_MODEL}`;
    const headers = { "content-type": "application/json", ...PROFILE_HEADER };
    const hit = async () => {
      const res = await fetch(encodeUrl, { method: "POST", headers, body });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`encode answered ${res.status}`);
      if (res.headers.get("x-svc-cache") !== "hit") throw new Error("a repeat was not a hit");
    };
    const healthz = async () => {
      const res = await fetch(`${router.url}/healthz`);
      await res.arrayBuffer();
    };
    // The first answer comes from the worker and is stored; then both paths warm up.
    const first = await fetch(encodeUrl, { method: "POST", headers, body });
    await first.arrayBuffer();
    await p50(300, hit);
    await p50(300, healthz);
    const diffs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      // Alternate which goes first, so that neither always follows the other.
      let healthzP50: number, c: number;
      if (r % 2 === 0) {
        healthzP50 = await p50(requests, healthz);
        c = await p50(requests, hit);
      } else {
        c = await p50(requests, hit);
        healthzP50 = await p50(requests, healthz);
      }
      diffs.push(c - healthzP50);
      console.log(
        `round ${r + 1}: /healthz p50 ${healthzP50.toFixed(3)} ms, hit p50 ${c.toFixed(3)} ms, ` +
          `difference ${(c - healthzP50).toFixed(3)} ms`,
      );
    }
    const median = quantile(diffs, 0.5);
    const verdict = median <= HIT_OVER_HEALTHZ_BOUND_MS ? "PASS" : "FAIL";
    console.log(
      `hit over /healthz, median of ${rounds} rounds: ${median.toFixed(3)} ms ` +
        `(<= ${HIT_OVER_HEALTHZ_BOUND_MS} ms) ${verdict}`,
    );
  } finally {
    for (const s of services.reverse()) await s.proc.kill();
  }
}

if (import.meta.main) await main();
