/**
 * Closed-loop HTTP load: `concurrency` loops, each sends the next pre-encoded body and waits
 * for the whole answer. Light on purpose: bodies are encoded before the clock starts, fetch
 * keeps connections alive, answers are read as bytes and never decoded.
 */
import { pack } from "msgpackr/pack";
import { HeaderNames as H } from "@svc/shared/headers";
import type { LoadJob, LoadResult } from "./load_types.ts";

/** msgpack body of an encode request with one item per text. */
export function encodeBody(texts: readonly string[]): Uint8Array<ArrayBuffer> {
  // A copy with its own ArrayBuffer: what fetch's BodyInit accepts (pack may return a Buffer view).
  return new Uint8Array(pack({ items: texts.map((text) => ({ text })) }));
}

/** Run one job; never throws for HTTP or network failures (they are counted). */
export async function runLoad(job: LoadJob): Promise<LoadResult> {
  const bodies = job.requests.map(encodeBody);
  const headers = {
    "content-type": "application/msgpack",
    accept: "application/msgpack",
    ...job.headers,
  };
  const latenciesMs = new Array<number>(bodies.length).fill(-1);
  const serverMs = new Array<number>(bodies.length).fill(-1);
  const inferenceMs = new Array<number>(bodies.length).fill(-1);
  const statuses: Record<string, number> = {};
  let firstError: string | undefined;
  let next = 0;
  let ok = 0;
  const t0 = performance.now();
  const deadline = t0 + job.maxMs;
  let lastDone = t0;

  const loop = async () => {
    while (next < bodies.length && performance.now() < deadline) {
      const i = next++;
      const start = performance.now();
      let status = "error";
      try {
        const res = await fetch(job.url, {
          method: "POST",
          headers,
          body: bodies[i],
          signal: AbortSignal.timeout(job.timeoutMs),
        });
        const bytes = await res.arrayBuffer();
        status = String(res.status);
        if (res.status === 200) {
          latenciesMs[i] = performance.now() - start;
          serverMs[i] = headerMs(res.headers, H.totalTime);
          inferenceMs[i] = headerMs(res.headers, H.inferenceTime);
          ok++;
        } else {
          firstError ??= `HTTP ${res.status}: ${new TextDecoder().decode(bytes).slice(0, 300)}`;
        }
      } catch (err) {
        firstError ??= err instanceof Error ? err.message : String(err);
      }
      statuses[status] = (statuses[status] ?? 0) + 1;
      lastDone = performance.now();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, job.concurrency) }, loop));
  return {
    latenciesMs,
    serverMs,
    inferenceMs,
    elapsedMs: lastDone - t0,
    ok,
    failed: Object.values(statuses).reduce((a, b) => a + b, 0) - ok,
    statuses,
    firstError,
  };
}

/** A timing header in ms (the worker writes two decimals); -1 when absent or malformed. */
function headerMs(h: Headers, name: string): number {
  const v = Number(h.get(name) ?? NaN);
  return Number.isFinite(v) ? v : -1;
}
