/** GET /healthz and /readyz: open even when API keys are configured. */
import type { RouterReadyBody } from "@svc/shared/schemas/router";
import type { RouterContext } from "../context.ts";

/** Liveness: the process answers. */
export function healthz(): Response {
  return Response.json({ status: "ok" });
}

/** Readiness, with the number of workers that take new work. */
export function readyz(ctx: RouterContext): Response {
  const healthy = ctx.directory.snapshot().filter((w) => !w.draining).length;
  const body: RouterReadyBody = { status: "ready", healthy_workers: healthy };
  return Response.json(body);
}
