/** The access-log line and request metrics of one finished request, whatever path served it. */
import type { WorkerContext } from "./context.ts";
import type { RequestFacts } from "./model_call.ts";
import { apiEndpointOf } from "@svc/shared/status/request_series";

/** A finished request as it is recorded. */
export interface FinishedRequest {
  method: string;
  path: string;
  status: number;
  totalMs: number;
  traceId: string | undefined;
  facts: RequestFacts;
}

/** Log the request and, for a model operation, count it and observe its phases. */
export function recordRequest(ctx: WorkerContext, r: FinishedRequest): void {
  const endpoint = apiEndpointOf(r.path);
  const { model, phases: t, lora } = r.facts;
  if (endpoint) {
    ctx.metrics.observeRequest(
      model ?? "unknown",
      endpoint,
      r.status,
      t
        ? {
          queue: t.queue_ms,
          tokenization: t.tokenization_ms,
          inference: t.inference_ms,
          postprocessing: t.postprocessing_ms ?? 0,
          total: r.totalMs,
        }
        : { total: r.totalMs },
    );
    if (lora !== undefined) {
      ctx.metrics.loraRequests.inc({
        model: model ?? "unknown",
        endpoint,
        lora: ctx.registry.loraLabels.of(lora),
        status: String(r.status),
      });
    }
  }
  ctx.log("info", "request", {
    method: r.method,
    path: r.path,
    model: model ?? null,
    status: r.status,
    total_ms: Math.round(r.totalMs * 100) / 100,
    trace_id: r.traceId ?? null,
  });
}
