/**
 * The abandoned-work attack of issue 16.4, shared by the worker test and the router test: six
 * clients post 1024 long texts each over raw sockets, wait until the worker has started on them,
 * and disconnect; then one fresh request is timed.
 */
import assert from "node:assert/strict";
import { scrape, sum } from "../../observability/helpers/prom_text.ts";
import { rawRequest, within } from "../../hardening/helpers.ts";
import { waitFor } from "../../helpers/wait.ts";

const CLIENTS = 6;
const ITEMS = 1024;
/** fixture/dense truncates every item at its 128-token maximum. */
const TOKENS_PER_ITEM = 128;

/** Tokens `workerUrl` has run for fixture/dense so far. */
async function tokensRun(workerUrl: string): Promise<number> {
  return sum(await scrape(workerUrl), "svc_tokens_processed_total", { model: "fixture/dense" });
}

/** What the attack measured. */
export interface AbandonResult {
  /** Tokens of the abandoned requests the worker ran anyway (by the fresh answer). */
  ran: number;
  /** Tokens all abandoned requests would have cost. */
  all: number;
  /** Milliseconds the fresh request took. */
  freshMs: number;
}

/**
 * Run the attack against `url` (a worker, or a router in front of `workerUrl`), posting to
 * `path`; the fresh request is bounded by `freshBoundMs`.
 */
export async function abandonThenProbe(
  url: string,
  workerUrl: string,
  path: string,
  freshBoundMs: number,
): Promise<AbandonResult> {
  const text = "the quick brown fox jumps over the lazy dog ".repeat(20);
  const body = JSON.stringify({
    items: Array.from({ length: ITEMS }, (_, i) => ({ text: `${i} ${text}` })),
  });
  const sockets = [];
  try {
    const before = await tokensRun(workerUrl);
    for (let i = 0; i < CLIENTS; i++) {
      sockets.push(rawRequest(
        url,
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
          `Accept: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      ));
    }
    // Work has begun (the first batch finished) and gone on (a second one finished too): then
    // every client goes away, in the middle of its work.
    let first = 0;
    await waitFor(async () => (first = await tokensRun(workerUrl) - before) > 0, "work to start", {
      timeoutMs: 30_000,
    });
    await waitFor(
      async () => (await tokensRun(workerUrl)) - before >= 2 * first,
      "a second batch",
      { timeoutMs: 30_000 },
    );
    for (const s of sockets) s.socket.destroy();
    const t0 = performance.now();
    const res = await within(
      fetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ items: [{ text: "fresh" }] }),
      }),
      freshBoundMs,
      "the fresh request",
    );
    assert.equal(res.status, 200);
    await res.body?.cancel();
    const freshMs = performance.now() - t0;
    const ran = (await tokensRun(workerUrl)) - before;
    return { ran, all: CLIENTS * ITEMS * TOKENS_PER_ITEM, freshMs };
  } finally {
    for (const s of sockets) s.socket.destroy();
  }
}
