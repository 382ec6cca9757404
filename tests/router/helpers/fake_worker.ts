/**
 * In-process fake worker for router unit tests: a tiny HTTP server answering the worker API
 * with JSON that names the worker, plus the real fleet link (`worker/fleet/mod.ts`) dialling the
 * router. Needs only network and environment permissions.
 */
import { type FleetLink, startFleetLink, type WorkerStatusSnapshot } from "#worker/fleet/mod.ts";
import { loadWorkerSettings } from "@svc/worker/settings";

/** A model the fake worker serves. */
export interface FakeModel {
  name: string;
  bundle?: string;
  state?: WorkerStatusSnapshot["models"][number]["state"];
  /** Announced (register and status) and sent as `X-SVC-Model-Revision` on its answers. */
  revision?: string;
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
  /** When set, model answers carry a `pad` field of this many characters (large answers). */
  padBytes?: number;
  /** When set, model answers wait for it (a test releases them); `failWith` is read before. */
  hold?: Promise<void>;
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
  const fake: Pick<FakeWorker, "shuttingDown" | "failWith" | "padBytes" | "hold"> = {
    shuttingDown: false,
  };
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
      // Decided on arrival: a test may change it while this request is held.
      const failWith = fake.failWith;
      if (opts.hold) await opts.hold;
      if (fake.hold) await fake.hold;
      if (failWith) {
        const { status, detail, retryAfter } = failWith;
        const headers: Record<string, string> = retryAfter ? { "retry-after": retryAfter } : {};
        return Response.json({ detail }, { status, headers });
      }
      const headers: Record<string, string> = {
        "x-total-time": "1.00",
        "x-inference-time": "0.50",
        "x-trace-id": "t-1",
        "x-truncated-items": "2",
      };
      const revision = modelOf(url.pathname, body, state.models)?.revision;
      if (revision) headers["x-svc-model-revision"] = revision;
      const pad = fake.padBytes ? { pad: "x".repeat(fake.padBytes) } : {};
      return Response.json({ worker: opts.id, path: url.pathname, body, ...pad }, { headers });
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
        revision: m.revision,
      })),
    status: () => ({
      models: [...state.models.values()].map((m) => ({
        name: m.name,
        state: m.state ?? "available",
        queue_depth: 0,
        revision: m.revision,
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

/** The model a request names: in its path (`/v1/{op}/{model}`) or its JSON body's `model`. */
function modelOf(
  path: string,
  body: string,
  models: ReadonlyMap<string, FakeModel>,
): FakeModel | undefined {
  const m = path.match(/^\/v1\/(?:encode|score|extract)\/(.+)$/);
  if (m) return models.get(decodeURIComponent(m[1]));
  try {
    const named = (JSON.parse(body) as { model?: unknown }).model;
    return typeof named === "string" ? models.get(named) : undefined;
  } catch {
    return undefined;
  }
}
