/** Liveness and readiness probes. */
import type { WorkerContext } from "../context.ts";

/** GET /healthz: 200 "ok" while the process runs. */
export function healthz(): Response {
  return new Response("ok", { headers: { "content-type": "text/plain" } });
}

/** GET /readyz: 200 "ok" once preloading finished; 503 before, and once shutdown begins. */
export function readyz(ctx: WorkerContext): Response {
  if (ctx.state.ready && !ctx.state.draining) {
    return new Response("ok", { headers: { "content-type": "text/plain" } });
  }
  const why = ctx.state.draining ? "shutting down" : "starting";
  return new Response(why, {
    status: 503,
    headers: { "content-type": "text/plain", "retry-after": "5" },
  });
}
