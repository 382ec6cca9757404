/** Shared pieces of the hardening tests (issue 16): raw sockets, process memory, probe latency. */
import assert from "node:assert/strict";
import net from "node:net";
import { waitFor } from "../helpers/wait.ts";
import { FLEET_TOKEN, type Proc, spawnDeno } from "../observability/helpers/process.ts";

/** Resident memory of process `pid`, in MiB (read with `ps`, which every test machine has). */
export async function rssMiB(pid: number): Promise<number> {
  const out = await new Deno.Command("ps", { args: ["-o", "rss=", "-p", String(pid)] }).output();
  return Number(new TextDecoder().decode(out.stdout).trim()) / 1024;
}

/** A raw client socket: what it received, and when (ms after open) it was closed. */
export interface RawSocket {
  socket: net.Socket;
  received(): string;
  /** Resolves with the milliseconds from connect to close. */
  closed: Promise<number>;
}

/** Connect to `url`'s port and write `text` (request line, headers and any body bytes). */
export function rawRequest(url: string, text: string | Uint8Array): RawSocket {
  const { hostname, port } = new URL(url);
  const started = performance.now();
  let got = "";
  const socket = net.connect(Number(port), hostname, () => socket.write(text));
  socket.on("data", (d: Uint8Array) => got += new TextDecoder().decode(d));
  socket.on("error", () => {});
  const closed = new Promise<number>((resolve) =>
    socket.on("close", () => resolve(performance.now() - started))
  );
  return { socket, received: () => got, closed };
}

/** Milliseconds one GET of `url` took (its body read). */
export async function timeGet(url: string): Promise<{ ms: number; status: number }> {
  const t0 = performance.now();
  const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  await res.body?.cancel();
  return { ms: performance.now() - t0, status: res.status };
}

/** Resolve `p` or fail after `ms`, naming `what`. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Wait until the router at `routerUrl` (open status paths) lists `count` workers. */
export async function waitForWorkers(routerUrl: string, count: number): Promise<void> {
  await waitFor(
    async () => {
      const h = await (await fetch(`${routerUrl}/health`)).json();
      return h.worker_count === count;
    },
    `${count} worker(s) registered`,
    30_000,
  );
}

/**
 * The in-flight budget attack (1 MiB budget and body limit): three clients each send 400 KB of a
 * declared 1 MiB to `url` + `path` and pause; the third cannot fit and must get 503 QUEUE_FULL
 * with Retry-After. `headers`: extra header lines (each ending in CRLF); `whileHeld` runs while the
 * two admitted bodies are still in flight.
 */
export async function assertBudgetRefusesThird(
  url: string,
  path: string,
  headers = "",
  whileHeld?: () => Promise<void>,
): Promise<void> {
  const sockets: RawSocket[] = [];
  try {
    const part = "x".repeat(400 * 1024);
    for (let i = 0; i < 3; i++) {
      sockets.push(rawRequest(
        url,
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}` +
          `Content-Type: application/json\r\nContent-Length: ${1024 * 1024}\r\n\r\n${part}`,
      ));
      // A fixed pause, not a wait for a state: no state of a worker process says that it has
      // read a body (it exports none), so each body gets 300 ms to land before the next.
      await new Promise((r) => setTimeout(r, 300));
    }
    const refused = await within(
      Promise.race(sockets.map((s, i) => s.closed.then(() => i))),
      10_000,
      "one body to be refused",
    );
    const answer = sockets[refused].received();
    assert.match(answer, /^HTTP\/1\.1 503 /);
    assert.match(answer, /retry-after: 1/i);
    assert.match(answer, /QUEUE_FULL.*SVC_MAX_INFLIGHT_BODY_BYTES/);
    await whileHeld?.();
  } finally {
    for (const s of sockets) s.socket.destroy();
  }
}

/**
 * The slow-body attack of issue 16.1 against `url` (served by process `pid`): 20 sockets declare
 * 32 MiB on `path` and send 10 bytes, one more never finishes its headers. Asserts that memory
 * grows by less than 50 MB, `/healthz` stays under 2 s, and every socket gets 408 and is closed
 * within the idle timeout `idleMs` (not before it). Returns the RSS before and during the attack.
 * `headers`: extra header lines (each ending in CRLF).
 */
export async function assertSlowBodiesCheap(
  url: string,
  pid: number,
  path: string,
  idleMs: number,
  headers = "",
): Promise<{ before: number; after: number }> {
  const sockets: RawSocket[] = [];
  try {
    // Warm the probe path first so its latency below is about the attack, not the first call.
    await timeGet(`${url}/healthz`);
    const before = await rssMiB(pid);
    for (let i = 0; i < 20; i++) {
      sockets.push(rawRequest(
        url,
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Content-Type: application/json\r\n` +
          "Content-Length: 33554000\r\n\r\n0123456789",
      ));
    }
    const headless = rawRequest(url, `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
    sockets.push(headless);
    // A fixed pause, not a wait for a state: nothing a worker process exports says it has taken
    // these connections, so the attack gets 500 ms to land before it is measured.
    await new Promise((r) => setTimeout(r, 500));
    const probes = [];
    for (let i = 0; i < 5; i++) probes.push(await timeGet(`${url}/healthz`));
    const after = await rssMiB(pid);
    assert.ok(after - before < 50, `RSS grew ${(after - before).toFixed(1)} MB`);
    for (const p of probes) {
      assert.equal(p.status, 200);
      assert.ok(p.ms < 2000, `/healthz took ${p.ms.toFixed(0)} ms during the attack`);
    }
    // Every stalled body is answered 408 and its connection closed within the idle timeout
    // (plus a generous margin for a loaded machine); so is the stalled header block.
    const closedAt = await within(
      Promise.all(sockets.map((s) => s.closed)),
      idleMs + 8000,
      "stalled connections to be closed",
    );
    for (const s of sockets) assert.match(s.received(), /^HTTP\/1\.1 408 /);
    assert.ok(Math.min(...closedAt) >= idleMs * 0.9, "not closed before the timeout");
    const body = sockets[0].received().split("\r\n\r\n")[1];
    assert.match(body, /REQUEST_TIMEOUT.*SVC_BODY_IDLE_TIMEOUT_MS/);
    // Still serving.
    assert.equal((await timeGet(`${url}/healthz`)).status, 200);
    return { before, after };
  } finally {
    for (const s of sockets) s.socket.destroy();
  }
}

/**
 * A fake worker process on node:http (tests/router/helpers/socket_worker_main.ts) registered with
 * `routerUrl` as `id` in pool cpu: it answers with the length and byte sum of each body, and exits
 * on a request whose trace id is `poison`; `transport`: how the router sends it requests.
 */
export function socketWorkerProcess(
  routerUrl: string,
  id: string,
  transport: "connection" | "http" = "http",
): Proc {
  return spawnDeno(["run", "-P=router", "tests/router/helpers/socket_worker_main.ts"], {
    SVC_ROUTER_URL: routerUrl,
    SVC_WORKER_TOKEN: FLEET_TOKEN,
    SVC_WORKER_ID: id,
    SVC_WORKER_TRANSPORT: transport,
  });
}
