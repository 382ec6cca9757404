/** Middleware: one access-log line and the request metrics for every answered request. */
import type { MiddlewareHandler } from "hono";
import { HeaderNames as H } from "@svc/shared/headers";
import type { Logger } from "@svc/shared/log";
import type { RouterEnv } from "../context.ts";
import type { RouterMetrics } from "../metrics/router_metrics.ts";
import { apiEndpointOf, type Phase } from "@svc/shared/status/request_series";

/** Metric/log label of a path: a bounded set, whatever the client sends. */
export function endpointLabel(path: string): string {
  const op = apiEndpointOf(path);
  if (op) return op;
  if (path === "/v1/models") return "models";
  if (path === "/v1/pools" || path.startsWith("/v1/pools/")) return "pools";
  if (path.startsWith("/v1/models/")) return "model";
  if (path === "/healthz" || path === "/readyz" || path === "/health") return path.slice(1);
  if (path === "/metrics") return "metrics";
  return "other";
}

/** Probe and scrape requests log at debug: they would drown the interesting lines. */
const QUIET = new Set(["healthz", "readyz", "metrics"]);

/** The workers' timing headers (ms) that become phases of `svc_request_duration_seconds`. */
const PHASE_HEADERS: readonly [Phase, string][] = [
  ["queue", H.queueTime],
  ["tokenization", H.tokenizationTime],
  ["inference", H.inferenceTime],
  ["postprocessing", H.postprocessingTime],
];

/**
 * The worker's request series for one model request as the router answered it: a count by
 * status, `total` as measured here, and the phases the worker reported in its headers.
 */
function observeModelRequest(
  metrics: RouterMetrics,
  endpoint: string,
  model: string,
  res: Response,
  seconds: number,
): void {
  metrics.svcRequests.inc({ model, endpoint, status: String(res.status) });
  metrics.svcDuration.observe({ model, endpoint, phase: "total" }, seconds);
  for (const [phase, header] of PHASE_HEADERS) {
    const ms = Number(res.headers.get(header) ?? NaN);
    if (Number.isFinite(ms) && ms >= 0) {
      metrics.svcDuration.observe({ model, endpoint, phase }, ms / 1000);
    }
  }
}

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
    deps.metrics.requests.inc({
      endpoint,
      status: String(status),
      machine_profile: c.get("machineProfile") ?? "none",
    });
    deps.metrics.duration.observe({ endpoint }, seconds);
    const op = apiEndpointOf(path);
    const cache = c.res.headers.get(H.cache) ?? undefined;
    // The workers' series count what workers computed: an answer the cache gave is not one.
    if (op && cache !== "hit") {
      observeModelRequest(deps.metrics, op, c.get("model") ?? "unknown", c.res, seconds);
    }
    deps.log(QUIET.has(endpoint) ? "debug" : "info", "request", {
      method: c.req.method,
      path,
      status,
      // The worker's name for it: one line shape whichever process wrote it.
      total_ms: Math.round(seconds * 100_000) / 100,
      machine_profile: c.get("machineProfile"),
      worker_id: c.get("worker"),
      cache,
      trace_id: c.res.headers.get(H.traceId) ?? undefined,
    });
  };
}
