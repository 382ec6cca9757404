/** HTTP plumbing shared by the routes: trace ids and timing headers. */
import { HeaderNames as H } from "@svc/shared/headers";
import type { TimingInfo } from "@svc/shared/schemas/timing";

export { traceIdOf } from "@svc/shared/http/request_id";

/** Build the wire `timing` object (postprocessing null when zero). */
export function makeTiming(
  totalMs: number,
  r: {
    queueMs: number;
    timing: { tokenizationMs: number; inferenceMs: number; postprocessingMs: number };
  },
): TimingInfo {
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    total_ms: round(totalMs),
    queue_ms: round(r.queueMs),
    tokenization_ms: round(r.timing.tokenizationMs),
    inference_ms: round(r.timing.inferenceMs),
    postprocessing_ms: r.timing.postprocessingMs > 0 ? round(r.timing.postprocessingMs) : null,
  };
}

/** `X-Truncated-Items`: how many of the answered items the model read only in part. */
export function truncationHeader(
  outputs: readonly ({ truncated?: boolean } | undefined)[],
): Record<string, string> {
  let n = 0;
  for (const o of outputs) if (o?.truncated) n++;
  return { [H.truncatedItems]: String(n) };
}

/** Timing headers (ms, two decimals); X-Postprocessing-Time only when > 0. */
export function timingHeaders(t: TimingInfo, traceId: string): Record<string, string> {
  const h: Record<string, string> = {
    [H.totalTime]: t.total_ms.toFixed(2),
    [H.queueTime]: t.queue_ms.toFixed(2),
    [H.tokenizationTime]: t.tokenization_ms.toFixed(2),
    [H.inferenceTime]: t.inference_ms.toFixed(2),
    [H.traceId]: traceId,
  };
  if (t.postprocessing_ms !== null && t.postprocessing_ms > 0) {
    h[H.postprocessingTime] = t.postprocessing_ms.toFixed(2);
  }
  return h;
}
