/**
 * The worker's HTTP app: every route but the model operations (served as direct requests by
 * model_routes.ts, through the same key check, drain gate, failure answers and record), plus the
 * middleware every request passes through.
 */
import { Hono } from "hono";
import type { Context } from "hono";
import { errorResponse, ServiceError } from "@svc/shared/errors";
import { HeaderNames as H, setServerVersion } from "@svc/shared/headers";
import { VERSION } from "@svc/shared/version";
import { methodNotAllowed } from "@svc/shared/http/method_not_allowed";
import { browserGuard } from "@svc/shared/http/browser_middleware";
import { type KeyCheck, requireWorkerKey } from "./api_key.ts";
import type { WorkerContext } from "./context.ts";
import { CLIENT_CLOSED, failureOf, shuttingDown } from "./failure.ts";
import { MODEL_ROUTES } from "./model_routes.ts";
import { recordRequest } from "./request_record.ts";
import { getModel, listModels } from "./routes/models.ts";
import { healthz, readyz } from "./routes/probes.ts";

/** Paths that stay open while draining (probes, metrics, status stream, dashboard). */
const ALWAYS_OPEN = new Set(["/", "/healthz", "/readyz", "/metrics", "/ws/status"]);

/**
 * Build the worker's Hono app; `keyCheck` is the API key's (shared with the model routes). Extra
 * routes (metrics, status stream) are added by the caller.
 */
export function createWorkerApp(ctx: WorkerContext, keyCheck: KeyCheck | undefined): Hono {
  const app = new Hono();

  // Every answer carries the version (the SIE clients warn on skew); a WebSocket's 101 stays as is.
  app.use("*", async (c, next) => {
    await next();
    if (c.res.status !== 101) setServerVersion(c.res.headers, VERSION);
  });

  // What a web page may make the worker do (bodies, Origin, Host on loopback, CORS): before the
  // key, so that preflights are answered.
  app.use("*", browserGuard(ctx.settings.browser));
  app.use("*", requireWorkerKey(keyCheck));

  app.use("*", async (c, next) => {
    const path = c.req.path;
    if (ALWAYS_OPEN.has(path)) return await next();
    const started = performance.now();
    await ctx.state.admit(next, () => {
      c.res = errorResponse(shuttingDown());
    });
    record(ctx, c, performance.now() - started);
  });

  app.get("/healthz", () => healthz());
  app.get("/readyz", () => readyz(ctx));
  app.get("/v1/models", () => listModels(ctx));
  app.get("/v1/models/*", (c) => getModel(ctx, c.req.url));

  // The model routes are listed too, so that another method on their paths gets its 405.
  app.notFound((c) =>
    methodNotAllowed({ routes: [...app.routes, ...MODEL_ROUTES] }, c.req.method, c.req.path) ??
      errorResponse(new ServiceError("NOT_FOUND", `no route for ${c.req.method} ${c.req.path}`))
  );
  app.onError((err, c) => {
    const where = { method: c.req.method, path: c.req.path };
    const se = failureOf(ctx, err, c.req.raw.signal.aborted, where);
    return se ? errorResponse(se) : new Response(null, { status: CLIENT_CLOSED });
  });
  return app;
}

/** Record a request the app answered. */
function record(ctx: WorkerContext, c: Context, totalMs: number): void {
  recordRequest(ctx, {
    method: c.req.method,
    path: c.req.path,
    status: c.res.status,
    totalMs,
    traceId: c.res.headers.get(H.traceId) ?? undefined,
    facts: {},
  });
}
