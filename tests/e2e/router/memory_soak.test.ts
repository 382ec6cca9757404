/**
 * Router memory under sustained load (issue 16.11): a real router process proxies thousands of
 * 1-item encodes to a fake worker, and its heap, measured after full collections, must come back
 * to near its idle level. Before the fix every proxied request left about 800 bytes of heap (a
 * pending `AbortSignal.timeout` of the 150 s upstream timeout) until its timer fired. Bounded
 * to about 15 s of load; the long run with RSS numbers is `deno task bench --router-soak`.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../helpers/wait.ts";
import { startFakeWorker } from "../../router/helpers/fake_worker.ts";
import { E2E_TOKEN, ROOT } from "../procs.ts";

/** Load stops after this long or this many requests, whichever comes first. */
const LOAD_MS = 15_000;
const MAX_REQUESTS = 40_000;
const CONCURRENCY = 32;

/** A router child process whose heap can be read after forced collections. */
class HeapProbe {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #lines: AsyncIterator<string>;

  constructor(env: Record<string, string>) {
    this.#child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-P=router",
        "--v8-flags=--expose-gc",
        "tests/router/helpers/heap_probe_main.ts",
      ],
      cwd: ROOT,
      env: { NO_COLOR: "1", ...env },
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    this.#lines = lines(this.#child.stdout);
  }

  /** The port the router bound. */
  async port(): Promise<number> {
    const line = await this.#next();
    const m = line.match(/^listening (\d+)$/);
    if (!m) throw new Error(`unexpected first line from the router: ${line}`);
    return Number(m[1]);
  }

  /** Heap in use after two full collections, in bytes. */
  async heapUsed(): Promise<number> {
    await this.#writer.write(new TextEncoder().encode("heap\n"));
    return (JSON.parse(await this.#next()) as { heap_used: number }).heap_used;
  }

  async #next(): Promise<string> {
    const r = await this.#lines.next();
    if (r.done) throw new Error("the router process exited");
    return r.value;
  }

  async close(): Promise<void> {
    await this.#writer.close().catch(() => {});
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // already gone
    }
    await this.#child.status;
  }
}

async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffered = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      yield buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
    }
  }
}

/** Closed-loop 1-item encodes; returns how many were answered 200 (others fail the test). */
async function load(url: string, untilMs: number, max: number): Promise<number> {
  const body = JSON.stringify({ items: [{ text: "a short text to embed" }] });
  let sent = 0;
  let ok = 0;
  const statuses = new Map<number, number>();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (sent < max && performance.now() < untilMs) {
      sent++;
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", "x-svc-machine-profile": "cpu" },
        body,
      });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 200) ok++;
    }
  }));
  assert.equal(ok, sent, `every request answered 200: ${JSON.stringify([...statuses])}`);
  return ok;
}

Deno.test({
  name: "router memory: the heap returns near idle after thousands of proxied requests",
  fn: async () => {
    const probe = new HeapProbe({
      SVC_HOST: "127.0.0.1",
      SVC_PORT: "0",
      SVC_WORKER_TOKEN: E2E_TOKEN,
      SVC_LOG_LEVEL: "error",
    });
    let worker: ReturnType<typeof startFakeWorker> | undefined;
    try {
      const routerUrl = `http://127.0.0.1:${await probe.port()}`;
      worker = startFakeWorker({
        routerUrl,
        token: E2E_TOKEN,
        id: "soak-worker",
        profile: "cpu",
        models: [{ name: "fixture/dense", state: "loaded" }],
      });
      const fake = worker;
      // The fake worker keeps what it answered; the soak does not need it.
      const trim = setInterval(() => fake.requests.length = 0, 500);
      try {
        await waitFor(() => fake.link.connected, "the worker to register", 20_000);
        const url = `${routerUrl}/v1/encode/fixture%2Fdense`;
        // Warm up before the idle reading: compiled code and connection pools are one-time
        // growth, not retention.
        await load(url, performance.now() + 10_000, 1500);
        const idle = await probe.heapUsed();
        const n = await load(url, performance.now() + LOAD_MS, MAX_REQUESTS);
        const after = await probe.heapUsed();
        const perRequest = Math.max(0, after - idle) / n;
        const mb = (b: number) => (b / 1048576).toFixed(1);
        console.log(
          `router heap: idle ${mb(idle)} MB, after ${n} requests ${mb(after)} MB ` +
            `(${perRequest.toFixed(0)} bytes retained per request)`,
        );
        // Enough even on a busy machine (about 180 requests/s when the whole suite runs).
        assert.ok(n >= 1500, `enough load to measure (${n} requests)`);
        // Before the fix: about 550 bytes per request (and ~800 on an idle machine).
        assert.ok(perRequest < 200, `retained ${perRequest.toFixed(0)} bytes per request`);
        assert.ok(after <= idle * 1.5, `heap ${mb(after)} MB within 1.5× idle ${mb(idle)} MB`);
      } finally {
        clearInterval(trim);
      }
    } finally {
      await worker?.close();
      await probe.close();
    }
  },
});
