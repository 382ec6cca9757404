/**
 * In-process fake worker for router unit tests: a tiny HTTP server answering the worker API
 * with JSON that names the worker, plus the real fleet link (`worker/fleet/mod.ts`) dialling the
 * router. Needs only network and environment permissions.
 */
import {
  type FleetLink,
  startFleetLink,
  type WorkerStatusSnapshot,
} from "../../../worker/fleet/mod.ts";
import { loadWorkerSettings } from "../../../worker/config/settings.ts";

/** A model the fake worker serves. */
export interface FakeModel {
  name: string;
  bundle?: string;
  state?: WorkerStatusSnapshot["models"][number]["state"];
}

/** Options of a fake worker. */
export interface FakeWorkerOptions {
  routerUrl: string;
  token: string;
  id: string;
  profile: string;
  bundle?: string;
  pool?: string;
  models: FakeModel[];
  /** Model operations wait for this before answering: a worker busy until the test lets go. */
  hold?: Promise<unknown>;
  /** Extra environment for the link (e.g. SVC_ROUTER_RECONNECT_MAX_MS). */
  env?: Record<string, string>;
}

/** A running fake worker. */
export interface FakeWorker {
  id: string;
  url: string;
  port: number;
  link: FleetLink;
  /** Paths of the requests it answered, in order. */
  requests: { method: string; path: string; headers: Headers; body: string }[];
  /** Mutable state reported in status frames. */
  state: {
    models: Map<string, FakeModel>;
    draining: boolean;
    queueDepth: number;
    inFlight: number;
  };
  /** Answer model operations with 503 SHUTTING_DOWN (as a worker in graceful shutdown does). */
  shuttingDown: boolean;
  /** When set, model operations get this error answer (status, `detail`, Retry-After). */
  failWith?: { status: number; detail: Record<string, unknown>; retryAfter?: string };
  logs: { level: string; msg: string; fields?: Record<string, unknown> }[];
  /** Stop the HTTP server only (the link stays: simulates a worker that cannot be reached). */
  stopHttp(): Promise<void>;
  close(): Promise<void>;
}

/** Start a fake worker and its fleet link (does not wait for registration). */
export function startFakeWorker(opts: FakeWorkerOptions): FakeWorker {
  const bundle = opts.bundle ?? "default";
  const state = {
    models: new Map(opts.models.map((m) => [m.name, { ...m }])),
    draining: false,
    queueDepth: 0,
    inFlight: 0,
  };
  const requests: FakeWorker["requests"] = [];
  const logs: FakeWorker["logs"] = [];
  const fake: Pick<FakeWorker, "shuttingDown" | "failWith"> = { shuttingDown: false };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      const url = new URL(req.url);
      const body = req.body ? await req.text() : "";
      requests.push({
        method: req.method,
        path: url.pathname + url.search,
        headers: req.headers,
        body,
      });
      if (fake.shuttingDown) {
        return Response.json({ detail: { code: "SHUTTING_DOWN", message: "shutting down" } }, {
          status: 503,
          headers: { "retry-after": "5" },
        });
      }
      if (url.pathname === "/v1/models") {
        return Response.json({
          models: [...state.models.values()].map((m) => ({
            name: m.name,
            loaded: m.state === "loaded",
            state: m.state ?? "available",
            inputs: ["text"],
            outputs: ["dense"],
            dims: { dense: 8 },
            max_sequence_length: 128,
            profiles: {},
          })),
        });
      }
      if (url.pathname.startsWith("/v1/models/")) {
        const name = decodeURIComponent(url.pathname.slice("/v1/models/".length));
        const m = state.models.get(name);
        if (!m) {
          return Response.json({ detail: { code: "MODEL_NOT_FOUND", message: name } }, {
            status: 404,
          });
        }
        return Response.json({ name, loaded: m.state === "loaded", state: m.state ?? "available" });
      }
      if (opts.hold) await opts.hold;
      if (fake.failWith) {
        const { status, detail, retryAfter } = fake.failWith;
        const headers: Record<string, string> = retryAfter ? { "retry-after": retryAfter } : {};
        return Response.json({ detail }, { status, headers });
      }
      return Response.json({ worker: opts.id, path: url.pathname, body }, {
        headers: {
          "x-total-time": "1.00",
          "x-inference-time": "0.50",
          "x-trace-id": "t-1",
          "x-truncated-items": "2",
        },
      });
    },
  );
  const port = server.addr.port;
  const link = startFleetLink({
    fleet: loadWorkerSettings({
      SVC_ROUTER_URL: opts.routerUrl,
      SVC_WORKER_TOKEN: opts.token,
      SVC_WORKER_ID: opts.id,
      SVC_MACHINE_PROFILE: opts.profile,
      SVC_BUNDLE: bundle,
      SVC_POOL: opts.pool,
      SVC_ROUTER_RECONNECT_MAX_MS: "500",
      ...opts.env,
    }).fleet,
    port,
    servedModels: () =>
      [...state.models.values()].map((m) => ({
        name: m.name,
        bundle: m.bundle ?? bundle,
        state: m.state ?? "available",
      })),
    status: () => ({
      models: [...state.models.values()].map((m) => ({
        name: m.name,
        state: m.state ?? "available",
        queue_depth: 0,
      })),
      queue_depth: state.queueDepth,
      in_flight: state.inFlight,
      memory_used_bytes: 1000,
      memory_total_bytes: 8000,
      draining: state.draining,
    }),
    log: (level, msg, fields) => logs.push({ level, msg, fields }),
  });
  if (!link) throw new Error("fleet link not started");
  let httpStopped = false;
  const stopHttp = async () => {
    if (httpStopped) return;
    httpStopped = true;
    await server.shutdown();
  };
  return Object.assign(fake, {
    id: opts.id,
    url: `http://127.0.0.1:${port}`,
    port,
    link,
    requests,
    state,
    logs,
    stopHttp,
    close: async () => {
      await link.close();
      await stopHttp();
    },
  });
}
