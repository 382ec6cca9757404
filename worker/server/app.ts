/**
 * The worker's HTTP app: every route but the model operations (served as direct requests by
 * model_routes.ts), behind the worker's steps (pipeline.ts), which the model operations pass too.
 */
import { Hono } from "hono";
import { errorDialectOf, errorResponse, ServiceError } from "@svc/shared/errors";
import { methodNotAllowed } from "@svc/shared/http/method_not_allowed";
import type { WorkerContext } from "./context.ts";
import { CLIENT_CLOSED, failureOf } from "./failure.ts";
import { MODEL_ROUTES } from "./model_routes.ts";
import { workerMiddleware, type WorkerSteps } from "./pipeline.ts";
import { getModel, listModels } from "./routes/models.ts";
import { healthz, readyz } from "./routes/probes.ts";

/**
 * Build the worker's Hono app behind `steps` (pipeline.ts, shared with the model routes). Extra
 * routes (metrics, status stream, dashboard) are added by the caller.
 */
export function createWorkerApp(ctx: WorkerContext, steps: WorkerSteps): Hono {
  const app = new Hono();
  for (const middleware of workerMiddleware(steps)) app.use("*", middleware);

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
    return se
      ? errorResponse(se, {}, errorDialectOf(where.path))
      : new Response(null, { status: CLIENT_CLOSED });
  });
  return app;
}
