/** Middleware: one access-log line and the request metrics for every answered request. */
import type { MiddlewareHandler } from "hono";
import { HeaderNames as H } from "@svc/shared/headers";
import type { Logger } from "@svc/shared/log";
import type { RouterEnv } from "../context.ts";
import type { RouterMetrics } from "../metrics/router_metrics.ts";

/** Metric/log label of a path: a bounded set, whatever the client sends. */
export function endpointLabel(path: string): string {
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

/** Probe and scrape requests log at debug: they would drown the interesting lines. */
const QUIET = new Set(["healthz", "readyz", "metrics"]);

/** Count, time and log each request (profile and worker come from the handlers). */
export function accessLog(
  deps: { metrics: RouterMetrics; log: Logger },
): MiddlewareHandler<RouterEnv> {
  return async (c, next) => {
    const start = performance.now();
    await next();
    const path = c.req.path;
    const endpoint = endpointLabel(path);
    const status = c.res.status;
    const seconds = (performance.now() - start) / 1000;
    deps.metrics.requests.inc([endpoint, String(status), c.get("profile") ?? "none"]);
    deps.metrics.duration.observe([endpoint], seconds);
    deps.log(QUIET.has(endpoint) ? "debug" : "info", "request", {
      method: c.req.method,
      path,
      status,
      ms: Math.round(seconds * 100_000) / 100,
      machine_profile: c.get("profile"),
      worker_id: c.get("worker"),
      trace_id: c.res.headers.get(H.traceId) ?? undefined,
    });
  };
}
