/** GET /healthz and /readyz: open even when API keys are configured. */
import type { RouterReadyBody } from "@svc/shared/schemas/router";
import { HeaderNames as H } from "@svc/shared/headers";
import type { RouterContext } from "../context.ts";

/** Liveness: the process answers. */
export function healthz(): Response {
  return Response.json({ status: "ok" });
}

/**
 * Readiness, with the number of workers that take new work. 200 even with no worker (a router
 * whose pools scale to zero must stay reachable to answer their 202s), unless
 * `SVC_READYZ_REQUIRE_WORKER` asks for a serving worker in the default pool (`deno task start`:
 * ready means its own worker has registered). The body names the default pool and says when it
 * has no worker either way.
 */
export function readyz(ctx: RouterContext): Response {
  const serving = ctx.directory.snapshot().filter((w) => !w.draining);
  const pool = ctx.settings.pools.defaultMachineProfile;
  const inPool = pool === undefined
    ? serving.length
    : serving.filter((w) => w.pool === pool).length;
  const body: RouterReadyBody = { status: "ready", healthy_workers: serving.length };
  if (pool !== undefined) {
    body.default_pool = { machine_profile: pool, serving_workers: inPool };
    if (inPool === 0) {
      body.message = `no worker serves the default pool "${pool}" yet: requests without ` +
        `${H.machineProfile} answer 202 until one registers`;
    }
  }
  if (ctx.settings.pools.readyRequiresWorker && inPool === 0) {
    body.status = "not_ready";
    body.message ??= "no worker serves yet: every request answers 202 until one registers";
    return Response.json(body, { status: 503, headers: { [H.retryAfter]: "1" } });
  }
  return Response.json(body);
}
