/**
 * A fake worker on `node:http` whose connection behaviour a test sets: answer, hold the answer,
 * drop the connection once the whole request arrived (a worker that died of it), or drop it
 * before the body arrived (a worker that died of something else meanwhile). It registers over the
 * real fleet link (`worker/fleet/mod.ts`), like the in-process fake worker, and counts what it
 * received, so a test can tell whether the router sent a request again. Run as a process
 * (crash_worker_main.ts), it can also end that process on a poison request.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { type FleetLink, startFleetLink } from "#worker/fleet/mod.ts";
import { loadWorkerSettings } from "@svc/worker/settings";
import type { DirectAnswer, DirectRequest } from "@svc/shared/http/direct_call";

/** What the worker does with the next model requests. */
export type SocketBehaviour =
  /** Read the body, answer 200 `{worker, bytes, sum}`. */
  | "answer"
  /** Read the body, then wait for {@link SocketWorker.releaseHeld} before answering. */
  | "hold"
  /** Read the whole body, then destroy the connection without an answer. */
  | "drop_after_body"
  /** Destroy the connection as soon as the headers arrived, before the body is read. */
  | "drop_before_body";

/** One request as the worker saw it. */
export interface SeenRequest {
  path: string;
  /** Body bytes received (for a dropped-before-body request: 0). */
  bytes: number;
  /** Sum of the body's bytes modulo 2^32 (a cheap check that it arrived intact). */
  sum: number;
}

/** A running socket worker. */
export interface SocketWorker {
  id: string;
  url: string;
  link: FleetLink;
  behaviour: SocketBehaviour;
  /** Model requests that reached it, in order. */
  seen: SeenRequest[];
  /** Connections whose request was cancelled by the router (closed before the answer). */
  cancelled: number;
  /** Answer every held request. */
  releaseHeld(): void;
  /** Stop listening and drop every connection; the fleet link stays (a process going down). */
  stopHttp(): Promise<void>;
  close(): Promise<void>;
}

/** Sum of `bytes` modulo 2^32, as the socket worker reports it. */
export function byteSum(bytes: Uint8Array, start = 0): number {
  let s = start;
  for (let i = 0; i < bytes.length; i++) s = (s + bytes[i]) >>> 0;
  return s;
}

/** Start a socket worker serving `models` in pool `profile`; resolves once it listens. */
export async function startSocketWorker(opts: {
  routerUrl: string;
  token: string;
  id: string;
  profile: string;
  models: { name: string; state?: "loaded" | "available" }[];
  behaviour?: SocketBehaviour;
  /**
   * A request whose trace id is this value ends the process once its body has arrived (the trace
   * id is one of the few headers the router forwards).
   */
  exitOnTraceId?: string;
  /**
   * `connection`: model requests come over the fleet link (the worker's connection adapter),
   * answered as over HTTP (`answer` and `hold`); default `http`.
   */
  transport?: "connection" | "http";
}): Promise<SocketWorker> {
  const held: (() => void)[] = [];
  const sockets = new Set<import("node:net").Socket>();
  const server = http.createServer((req, res) => {
    if (!req.url?.startsWith("/v1/")) {
      res.writeHead(404).end();
      return;
    }
    const behaviour = worker.behaviour;
    if (behaviour === "drop_before_body") {
      worker.seen.push({ path: req.url, bytes: 0, sum: 0 });
      req.socket.destroy();
      return;
    }
    let bytes = 0;
    let sum = 0;
    let dropped = false;
    req.on("data", (chunk: Uint8Array) => {
      bytes += chunk.length;
      sum = byteSum(chunk, sum);
    });
    req.on("end", () => {
      worker.seen.push({ path: req.url!, bytes, sum });
      if (opts.exitOnTraceId && req.headers["x-trace-id"] === opts.exitOnTraceId) Deno.exit(70);
      if (behaviour === "drop_after_body") {
        dropped = true;
        return void req.socket.destroy();
      }
      const answer = () => {
        if (res.destroyed) return;
        const text = JSON.stringify({ worker: opts.id, bytes, sum });
        res.writeHead(200, { "content-type": "application/json" }).end(text);
      };
      if (behaviour === "hold") held.push(answer);
      else answer();
    });
    res.on("close", () => {
      if (!res.writableFinished && !dropped) worker.cancelled++;
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as AddressInfo).port;
  const link = startFleetLink({
    fleet: loadWorkerSettings({
      SVC_ROUTER_URL: opts.routerUrl,
      SVC_WORKER_TOKEN: opts.token,
      SVC_WORKER_ID: opts.id,
      SVC_MACHINE_PROFILE: opts.profile,
      SVC_ROUTER_RECONNECT_MAX_MS: "500",
      SVC_WORKER_TRANSPORT: opts.transport ?? "http",
    }).fleet,
    port,
    ...(opts.transport === "connection" ? { serve: (req: DirectRequest) => serve(req) } : {}),
    servedModels: () =>
      opts.models.map((m) => ({ name: m.name, bundle: "default", state: m.state ?? "available" })),
    status: () => ({
      models: opts.models.map((m) => ({
        name: m.name,
        state: m.state ?? "available",
        queue_depth: 0,
      })),
      queue_depth: 0,
      in_flight: 0,
      memory_used_bytes: 1000,
      memory_total_bytes: 8000,
      draining: false,
    }),
    log: () => {},
  });
  if (!link) throw new Error("fleet link not started");
  /** A model request over the connection, handled as the HTTP server handles one. */
  async function serve(req: DirectRequest): Promise<DirectAnswer> {
    const path = new URL(req.url).pathname;
    if (!path.startsWith("/v1/")) return { status: 404, headers: {}, body: new Uint8Array() };
    let bytes = 0;
    let sum = 0;
    for (;;) {
      const chunk = await req.body?.read();
      if (!chunk) break;
      bytes += chunk.length;
      sum = byteSum(chunk, sum);
    }
    worker.seen.push({ path, bytes, sum });
    if (opts.exitOnTraceId && req.header("x-trace-id") === opts.exitOnTraceId) Deno.exit(70);
    if (worker.behaviour === "hold") {
      // Released by the test, or cancelled by the router (the stream reset: client gone).
      await new Promise<void>((resolve) => {
        held.push(resolve);
        req.signal.addEventListener("abort", () => {
          worker.cancelled++;
          resolve();
        }, { once: true });
      });
    }
    const text = JSON.stringify({ worker: opts.id, bytes, sum });
    return {
      status: 200,
      headers: { "content-type": "application/json" },
      body: new TextEncoder().encode(text),
    };
  }
  const worker: SocketWorker = {
    id: opts.id,
    url: `http://127.0.0.1:${port}`,
    link,
    behaviour: opts.behaviour ?? "answer",
    seen: [],
    cancelled: 0,
    releaseHeld: () => {
      for (const answer of held.splice(0)) answer();
    },
    stopHttp: async () => {
      if (!server.listening) return;
      worker.releaseHeld();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
    close: async () => {
      await link.close();
      await worker.stopHttp();
    },
  };
  return worker;
}
