/** The worker's HTTP app: routes plus the middleware every request passes through. */
import { Hono } from "hono";
import type { Context } from "hono";
import { ClientGoneError, errorResponse, ServiceError, toServiceError } from "@svc/shared/errors";
import { HeaderNames as H, setServerVersion } from "@svc/shared/headers";
import { VERSION } from "@svc/shared/version";
import { methodNotAllowed } from "@svc/shared/http/method_not_allowed";
import { requireWorkerKey } from "./api_key.ts";
import type { WorkerContext } from "./context.ts";
import { handleEncode } from "./routes/encode.ts";
import { handleEmbeddings } from "./routes/embeddings.ts";
import { handleScore } from "./routes/score.ts";
import { handleExtract } from "./routes/extract.ts";
import { getModel, listModels } from "./routes/models.ts";
import { healthz, readyz } from "./routes/probes.ts";
import { loraOf, modelLabel, phasesOf } from "./request_labels.ts";
import { apiEndpointOf } from "@svc/shared/status/request_series";

/** Paths that stay open while draining (probes, metrics, status stream, dashboard). */
const ALWAYS_OPEN = new Set(["/", "/healthz", "/readyz", "/metrics", "/ws/status"]);

/** Status recorded for a request whose client disconnected before its answer (nginx's 499). */
export const CLIENT_CLOSED = 499;

/** Build the worker's Hono app. Extra routes (metrics, status stream) are added by the caller. */
export function createWorkerApp(ctx: WorkerContext): Hono {
  const app = new Hono();

  // Every answer carries the version (the SIE clients warn on skew); a WebSocket's 101 stays as is.
  app.use("*", async (c, next) => {
    await next();
    if (c.res.status !== 101) setServerVersion(c.res.headers, VERSION);
  });

  app.use("*", requireWorkerKey(ctx.settings.apiKey));

  app.use("*", async (c, next) => {
    const path = c.req.path;
    if (ALWAYS_OPEN.has(path)) return await next();
    const started = performance.now();
    if (ctx.state.draining) {
      c.res = errorResponse(
        new ServiceError("SHUTTING_DOWN", "worker is shutting down"),
      );
    } else {
      ctx.state.enter();
      try {
        await next();
      } finally {
        ctx.state.leave();
      }
    }
    record(ctx, c, performance.now() - started);
  });

  app.get("/healthz", () => healthz());
  app.get("/readyz", () => readyz(ctx));
  app.get("/v1/models", () => listModels(ctx));
  app.get("/v1/models/*", (c) => getModel(ctx, c.req.url));
  app.post("/v1/encode/*", (c) => handleEncode(ctx, c));
  app.post("/v1/embeddings", (c) => handleEmbeddings(ctx, c));
  app.post("/v1/score/*", (c) => handleScore(ctx, c));
  app.post("/v1/extract/*", (c) => handleExtract(ctx, c));

  app.notFound((c) =>
    methodNotAllowed(app, c.req.method, c.req.path) ??
      errorResponse(new ServiceError("NOT_FOUND", `no route for ${c.req.method} ${c.req.path}`))
  );
  app.onError((err, c) => {
    if (err instanceof ClientGoneError || c.req.raw.signal.aborted) {
      // Nobody is left to answer: not a failure. 499 (a client's close) is what the access log
      // and metrics show; the bytes are never sent.
      ctx.log("debug", "client disconnected", { method: c.req.method, path: c.req.path });
      return new Response(null, { status: CLIENT_CLOSED });
    }
    let se = toServiceError(err);
    if (ctx.state.stopping && se.status >= 500 && se.status !== 503) {
      // Torn down by the shutdown under the request: another worker can serve it.
      se = new ServiceError("SHUTTING_DOWN", "worker stopped before this request finished");
    }
    if (!(err instanceof ServiceError)) {
      ctx.log("error", "unhandled error", {
        path: c.req.path,
        error: err instanceof Error ? err.message : String(err),
      });
    }
    return errorResponse(se);
  });
  return app;
}

/** Access log line and request metrics for one finished request. */
function record(ctx: WorkerContext, c: Context, totalMs: number): void {
  const endpoint = apiEndpointOf(c.req.path);
  const model = modelLabel(c);
  const status = c.res.status;
  if (endpoint) {
    const t = phasesOf(c);
    ctx.metrics.observeRequest(
      model ?? "unknown",
      endpoint,
      status,
      t
        ? {
          queue: t.queue_ms,
          tokenization: t.tokenization_ms,
          inference: t.inference_ms,
          postprocessing: t.postprocessing_ms ?? 0,
          total: totalMs,
        }
        : { total: totalMs },
    );
    const lora = loraOf(c);
    if (lora !== undefined) {
      ctx.metrics.loraRequests.inc({
        model: model ?? "unknown",
        endpoint,
        lora: ctx.registry.loraLabels.of(lora),
        status: String(status),
      });
    }
  }
  ctx.log("info", "request", {
    method: c.req.method,
    path: c.req.path,
    model: model ?? null,
    status,
    total_ms: Math.round(totalMs * 100) / 100,
    trace_id: c.res.headers.get(H.traceId) ?? null,
  });
}
