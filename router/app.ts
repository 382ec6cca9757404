/**
 * The router's Hono app: the fleet socket and live page, then middleware (version header, access
 * log and metrics, client and admin rights: router/auth/access.ts) around thin routes
 * (router/routes/*).
 */
import { methodNotAllowed } from "@svc/shared/http/method_not_allowed";
import { Hono } from "hono";
import type { Context } from "hono";
import { errorDialectOf, errorResponse, ServiceError, toServiceError } from "@svc/shared/errors";
import { FLEET_PATH } from "@svc/shared/fleet/protocol";
import { StreamSlots } from "@svc/shared/dashboard/broadcaster";
import { browserGuard } from "@svc/shared/http/browser_middleware";
import { requestIdStep } from "@svc/shared/http/request_id";
import { honoRequestView, stepMiddleware } from "@svc/shared/http/steps";
import type { RouterContext, RouterEnv } from "./context.ts";
import { CLUSTER_STATUS_PATH, mountDashboard } from "./dashboard/mount.ts";
import { collectFleetMetrics } from "./metrics/fleet_collector.ts";
import { accessLog } from "./middleware/access_log.ts";
import { allowed, requireRights } from "./middleware/access.ts";
import { adminRights, clientRights, fleetDetailRights, statusRights } from "./auth/access.ts";
import { serverVersion } from "./middleware/version.ts";
import { mountFleetStatus, STATUS_PATH } from "./status/stream.ts";
import { DRAIN_PATH, handleDrainWorker } from "./routes/admin.ts";
import { BODY_MODEL_PATHS, handleBodyModelRequest } from "./routes/body_model.ts";
import { health } from "./routes/health.ts";
import { metrics } from "./routes/metrics.ts";
import { handleModelOp, MODEL_OPS } from "./routes/model_ops.ts";
import { handleGetModel, handleListModels } from "./routes/models.ts";
import { healthz, readyz } from "./routes/probes.ts";
import {
  handleCreatePool,
  handleDeletePool,
  handleGetPool,
  handleListPools,
  handleRenewPool,
  POOL_PATH,
  POOL_RENEW_PATH,
  POOLS_PATH,
} from "./routes/pools.ts";

/**
 * Paths that are fleet detail (worker ids, URLs, load): admin rights or `SVC_STATUS_PUBLIC`. The
 * page (`/`) is not one: it is static, and its data comes from /ws/cluster-status (a browser sends
 * the key as a subprotocol, shared/http/ws_auth.ts).
 */
const FLEET_DETAIL_PATHS = [CLUSTER_STATUS_PATH, "/metrics"] as const;
/** Status paths for clients: their answer leaves fleet detail out unless the client may see it. */
const CLIENT_STATUS_PATHS = [STATUS_PATH, "/health"] as const;

/** Build the router app. */
export function createRouterApp(ctx: RouterContext): Hono<RouterEnv> {
  const app = new Hono<RouterEnv>();
  collectFleetMetrics(ctx.metrics, ctx.directory, ctx.demand);

  // Every answer carries x-request-id (and X-Trace-ID: the worker's, else one of its own).
  app.use("*", stepMiddleware(requestIdStep, honoRequestView, errorDialectOf));
  // Every answer carries the version, the dashboard page included; a WebSocket's 101 stays as is.
  app.use("*", serverVersion());
  // What a web page may make the router do: bodies, Origin, Host on loopback, CORS.
  app.use("*", browserGuard(ctx.settings.browser));
  // What describes the fleet (worker ids and URLs, models, load) is for admins; the dashboard
  // page (GET /) carries no data and stays open.
  for (const path of FLEET_DETAIL_PATHS) {
    app.use(path, requireRights(ctx.access, fleetDetailRights));
  }
  for (const path of CLIENT_STATUS_PATHS) app.use(path, requireRights(ctx.access, statusRights));
  const detail = (c: Context<RouterEnv>) => allowed(ctx.access, fleetDetailRights, c);
  // One cap on status subscribers for all of the router's streams.
  const slots = new StreamSlots(ctx.settings.http.maxStreamClients);
  // The fleet socket comes before the access log: it is authenticated with the worker token, not
  // with client API keys, and is not an API request.
  app.get(FLEET_PATH, (c) => ctx.hub.handleUpgrade(c.req.raw, addrOf(c)));
  // Live fleet page (GET /) and its stream (/ws/cluster-status), also not counted as API requests.
  mountDashboard(app, {
    directory: ctx.directory,
    demand: ctx.demand,
    metrics: ctx.metrics,
    log: ctx.log,
    routerId: ctx.routerId,
    pools: ctx.settings.pools,
    limits: ctx.settings.views,
    slots,
  });
  // The workers' status stream, fleet-wide (not an API request either).
  mountFleetStatus(app, {
    directory: ctx.directory,
    metrics: ctx.metrics,
    log: ctx.log,
    detail,
    limits: ctx.settings.views,
    slots,
    routerId: ctx.routerId,
  });
  app.use("*", accessLog(ctx));
  // Again inside the access log: its line names the trace id an error answer is sent with.
  app.use("*", stepMiddleware(requestIdStep, honoRequestView, errorDialectOf));

  app.onError((err, c) => {
    if (!(err instanceof ServiceError)) {
      ctx.log("error", "unhandled router error", { path: c.req.path, error: String(err) });
    }
    // The compatible routes answer in their clients' error envelope as well (worker answers
    // come through as the worker wrote them, in the same envelope).
    return errorResponse(toServiceError(err), {}, errorDialectOf(c.req.path));
  });
  app.notFound((c) =>
    methodNotAllowed(app, c.req.method, c.req.path) ??
      errorResponse(new ServiceError("NOT_FOUND", `no route for ${c.req.method} ${c.req.path}`))
  );

  // Probes stay open even when API keys are configured (/health and /metrics: see above).
  app.get("/healthz", () => healthz());
  app.get("/readyz", () => readyz(ctx));
  app.get("/health", async (c) => health(ctx, await detail(c)));
  app.get("/metrics", () => metrics(ctx));

  app.use("/v1/*", requireRights(ctx.access, clientRights));
  app.use("/v2/*", requireRights(ctx.access, clientRights));
  app.use("/v1/admin/*", requireRights(ctx.access, adminRights));
  for (const op of MODEL_OPS) app.post(`/v1/${op}/*`, (c) => handleModelOp(ctx, c, op));
  for (const path of BODY_MODEL_PATHS) app.post(path, (c) => handleBodyModelRequest(ctx, c));
  app.get("/v1/models", (c) => handleListModels(ctx, c));
  app.get("/v1/models/*", (c) => handleGetModel(ctx, c));
  app.post(DRAIN_PATH, (c) => handleDrainWorker(ctx, c));
  // Worker ids and URLs in a pool are fleet detail: named only for callers with those rights.
  app.get(POOLS_PATH, async (c) => handleListPools(ctx, await detail(c)));
  app.post(POOLS_PATH, async (c) => handleCreatePool(ctx, c, await detail(c)));
  app.get(POOL_PATH, async (c) => handleGetPool(ctx, c, await detail(c)));
  app.delete(POOL_PATH, (c) => handleDeletePool(ctx, c));
  app.post(POOL_RENEW_PATH, (c) => handleRenewPool(ctx, c));
  return app;
}

/** Remote address for logs, when the server passes it. */
function addrOf(c: Context<RouterEnv>): string | undefined {
  const a = c.env?.remoteAddr;
  return a ? `${a.hostname}:${a.port}` : undefined;
}
