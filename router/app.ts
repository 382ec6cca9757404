/** The router's Hono app: probes, fleet socket, metrics, and the proxied API. */
import { Hono } from "hono";
import type { Context } from "hono";
import { errorResponse, ServiceError, toServiceError } from "@svc/shared/errors";
import { FLEET_PATH } from "@svc/shared/fleet/protocol";
import { Headers as H, setServerVersion } from "@svc/shared/headers";
import { VERSION } from "@svc/shared/version";
import { bearerToken, type SecretSet } from "./auth.ts";
import { decodeBody, readBodyLimited } from "@svc/shared/codec/decode";
import type { InputLimits } from "@svc/shared/codec/limits";
import type { RouterSettings } from "./settings.ts";
import type { WorkerDirectory } from "./directory/types.ts";
import type { FleetHub } from "./fleet/hub.ts";
import { mountDashboard } from "./dashboard/mod.ts";
import { buildHealth } from "./health.ts";
import type { Logger } from "@svc/shared/log";
import type { RouterMetrics } from "./metrics/router_metrics.ts";
import { collectFleetMetrics } from "./metrics/fleet_collector.ts";
import { getModel, listModels } from "./models.ts";
import type { LoadTracker } from "./pools/load.ts";
import { machineProfileOf, routeModel } from "./pools/resolve.ts";
import { MAX_MODEL_NAME_LENGTH, modelFromPath } from "@svc/shared/catalog/model_path";
import type { DemandTracker } from "./provisioning.ts";
import { forward, type ProxyDeps } from "./proxy.ts";

/** Everything the app needs; built by server.ts (or a test). */
export interface RouterDeps {
  settings: RouterSettings;
  directory: WorkerDirectory;
  hub: FleetHub;
  apiKeys: SecretSet;
  metrics: RouterMetrics;
  demand: DemandTracker;
  load: LoadTracker;
  log: Logger;
  routerId: string;
  /** Outbound fetch (tests may inject); defaults to the global fetch. */
  fetch?: typeof fetch;
}

/** Per-request values set by handlers and read by the metrics middleware. */
type AppEnv = {
  Bindings: { remoteAddr?: Deno.NetAddr };
  Variables: { profile: string; worker: string };
};

/** How often a waiting /v1/embeddings request looks for capacity again. */
const CAPACITY_POLL_MS = 200;

/** Operations routed by the model in their path. */
const MODEL_OPS = ["encode", "score", "extract"] as const;

/** Metric/log label of a path (bounded set, whatever the client sends). */
export function endpointOf(path: string): string {
  if (path.startsWith("/v1/encode/")) return "encode";
  if (path.startsWith("/v1/score/")) return "score";
  if (path.startsWith("/v1/extract/")) return "extract";
  if (path === "/v1/embeddings") return "embeddings";
  if (path === "/v1/models") return "models";
  if (path.startsWith("/v1/models/")) return "model";
  if (path === "/healthz" || path === "/readyz" || path === "/health") return path.slice(1);
  if (path === "/metrics") return "metrics";
  return "other";
}

/** Build the router app. */
export function createRouterApp(deps: RouterDeps): Hono<AppEnv> {
  const { settings, directory, metrics, demand, log } = deps;
  const app = new Hono<AppEnv>();
  const proxyDeps: ProxyDeps = {
    directory,
    load: deps.load,
    metrics,
    log,
    upstreamTimeoutMs: settings.upstreamTimeoutMs,
    spillLoad: settings.pools.affinitySpillLoad,
    fetch: deps.fetch,
  };

  collectFleetMetrics(metrics, directory, demand);

  // Every answer carries the version under both names (the SIE clients warn on skew), the
  // dashboard page included; a WebSocket's 101 stays untouched.
  app.use("*", async (c, next) => {
    await next();
    if (c.res.status !== 101) setServerVersion(c.res.headers, VERSION);
  });

  // The fleet socket comes before the middleware: its 101 response must stay untouched, and it
  // is authenticated with the worker token, not with client API keys.
  app.get(FLEET_PATH, (c) => deps.hub.handleUpgrade(c.req.raw, addrOf(c)));
  // Live fleet page (GET /) and its stream (/ws/cluster-status), also before the middleware.
  mountDashboard(app, { directory, demand, metrics, log, routerId: deps.routerId });

  app.use("*", async (c, next) => {
    const start = performance.now();
    await next();
    const path = c.req.path;
    const endpoint = endpointOf(path);
    const status = c.res.status;
    const seconds = (performance.now() - start) / 1000;
    metrics.requests.inc([endpoint, String(status), c.get("profile") ?? "none"]);
    metrics.duration.observe([endpoint], seconds);
    const probe = endpoint === "healthz" || endpoint === "readyz" || endpoint === "metrics";
    log(probe ? "debug" : "info", "request", {
      method: c.req.method,
      path,
      status,
      ms: Math.round(seconds * 100_000) / 100,
      machine_profile: c.get("profile"),
      worker_id: c.get("worker"),
      trace_id: c.res.headers.get(H.traceId) ?? undefined,
    });
  });

  app.onError((err, c) => {
    const se = toServiceError(err);
    if (!(err instanceof ServiceError)) {
      log("error", "unhandled router error", { path: c.req.path, error: String(err) });
    }
    return errorResponse(se);
  });
  app.notFound((c) =>
    errorResponse(new ServiceError("NOT_FOUND", `no route for ${c.req.method} ${c.req.path}`))
  );

  // Probes stay open even when API keys are configured.
  app.get("/healthz", (c) => c.json({ status: "ok" }));
  app.get("/readyz", (c) => {
    const healthy = directory.snapshot().filter((w) => !w.draining).length;
    return c.json({ status: "ready", healthy_workers: healthy });
  });
  app.get("/health", async (c) => {
    await directory.refresh();
    const workers = directory.snapshot();
    return c.json(buildHealth({
      workers,
      demand: demand.pending(workers),
      routerId: deps.routerId,
      directory: directory.kind,
      now: Date.now(),
    }));
  });
  app.get("/metrics", async (c) => {
    return c.body(await metrics.registry.render(), 200, {
      "content-type": metrics.registry.contentType,
    });
  });

  app.use("/v1/*", async (c, next) => {
    if (deps.apiKeys.empty) return await next();
    const key = bearerToken(c.req.header("authorization"));
    if (!(await deps.apiKeys.matches(key))) {
      throw new ServiceError("UNAUTHORIZED", "a valid API key is required (Authorization: Bearer)");
    }
    await next();
  });

  for (const op of MODEL_OPS) {
    app.post(`/v1/${op}/*`, (c) => modelOperation(c, op));
  }

  /** encode/score/extract: pool from the header, bundle from the path's model; 202 without capacity. */
  async function modelOperation(c: Context<AppEnv>, op: string): Promise<Response> {
    const profile = machineProfileOf(c.req.raw.headers, settings.pools);
    c.set("profile", profile);
    const model = modelFromPath(c.req.url, `/v1/${op}/`);
    const route = routeModel(model, directory);
    if (route === undefined) {
      throw new ServiceError("MODEL_NOT_FOUND", `model "${model}" is not in the catalog`);
    }
    const bundle = route.bundle;
    const body = await readBodyLimited(c.req.raw, settings.limits);
    const target = { pool: profile, bundle, model: route.model };
    const r = await forward(c.req.raw, body, target, proxyDeps);
    if (r.kind === "response") {
      c.set("worker", r.worker.id);
      demand.satisfied(profile, bundle);
      return r.response;
    }
    if (r.kind === "not_served") throw notServed(model, profile, bundle);
    return provisioning(profile, bundle, model);
  }

  /** 202 with Retry-After and the demand recorded. */
  function provisioning(profile: string, bundle: string, model: string): Response {
    const entry = demand.record(profile, bundle, model);
    const retry = settings.provisioning.retryAfterS;
    const body = {
      status: "provisioning",
      machine_profile: profile,
      bundle,
      model,
      retry_after_s: retry,
      pending: entry.pending,
      message:
        `no worker of pool "${profile}" serves bundle "${bundle}" yet; capacity has been requested, retry after ${retry} s`,
    };
    return new Response(JSON.stringify(body), {
      status: 202,
      headers: { "content-type": "application/json", [H.retryAfter]: String(retry) },
    });
  }

  /** OpenAI-compatible embeddings: never 202 (clients take any 2xx as success); waits, then 503. */
  app.post("/v1/embeddings", async (c) => {
    const profile = machineProfileOf(c.req.raw.headers, settings.pools);
    c.set("profile", profile);
    const body = await readBodyLimited(c.req.raw, settings.limits);
    const model = modelOfEmbeddingsBody(
      body,
      c.req.header("content-type") ?? null,
      settings.limits,
    );
    const route = routeModel(model, directory);
    if (route === undefined) {
      throw new ServiceError("MODEL_NOT_FOUND", `model "${model}" is not in the catalog`);
    }
    const bundle = route.bundle;
    const target = { pool: profile, bundle, model: route.model };
    const deadline = Date.now() + settings.provisioning.embeddingsWaitMs;
    let recorded = false;
    while (true) {
      const r = await forward(c.req.raw, body, target, proxyDeps);
      if (r.kind === "response") {
        c.set("worker", r.worker.id);
        demand.satisfied(profile, bundle);
        return r.response;
      }
      if (r.kind === "not_served") throw notServed(model, profile, bundle);
      if (!recorded) {
        demand.record(profile, bundle, model);
        recorded = true;
      }
      if (Date.now() >= deadline || c.req.raw.signal.aborted) {
        throw new ServiceError(
          "NO_CAPACITY",
          `no worker of pool "${profile}" serves bundle "${bundle}" yet; capacity has been requested`,
          { retryAfterS: settings.provisioning.retryAfterS },
        );
      }
      await sleep(Math.min(CAPACITY_POLL_MS, Math.max(1, deadline - Date.now())));
    }
  });

  app.get("/v1/models", async (c) => {
    const workers = scopedWorkers(c);
    return c.json({ models: await listModels(workers, log, deps.fetch) });
  });

  app.get("/v1/models/*", async (c) => {
    const model = modelFromPath(c.req.url, "/v1/models/");
    const info = await getModel(scopedWorkers(c), model, log, deps.fetch);
    if (!info) throw new ServiceError("MODEL_NOT_FOUND", `model "${model}" is not in the catalog`);
    return c.json(info);
  });

  /** Live workers, restricted to the pool the client named (if it named one). */
  function scopedWorkers(c: Context<AppEnv>) {
    const named = c.req.header(H.machineProfile) ?? c.req.header(H.machineProfileAlias);
    const all = directory.snapshot();
    if (!named) return all;
    const profile = machineProfileOf(c.req.raw.headers, settings.pools);
    c.set("profile", profile);
    return all.filter((w) => w.pool === profile);
  }

  return app;
}

/** 404 for a model its pool does not offer (filtered out on those workers). */
function notServed(model: string, profile: string, bundle: string): ServiceError {
  return new ServiceError(
    "MODEL_NOT_FOUND",
    `model "${model}" is not served by the workers of pool "${profile}" (bundle "${bundle}")`,
  );
}

/**
 * The `model` field of an embeddings body (JSON or msgpack, like the worker), decoded with the
 * same input limits; the name is bounded before it is echoed in any error.
 */
function modelOfEmbeddingsBody(
  body: Uint8Array,
  contentType: string | null,
  limits: InputLimits,
): string {
  const parsed = decodeBody(body, contentType ?? "application/json", limits);
  const model = (parsed as { model?: unknown } | null)?.model;
  if (typeof model !== "string" || model === "" || model.length > MAX_MODEL_NAME_LENGTH) {
    throw new ServiceError(
      "INVALID_INPUT",
      `field 'model' must be a model name of 1 to ${MAX_MODEL_NAME_LENGTH} characters`,
    );
  }
  return model;
}

/** Remote address for logs, when the server passes it. */
function addrOf(c: Context<AppEnv>): string | undefined {
  const a = c.env?.remoteAddr;
  return a ? `${a.hostname}:${a.port}` : undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
