/** GET /health: the fleet at a glance (workers, pools, models, pending demand). */
import type { RouterContext } from "../context.ts";
import { buildHealth } from "../health.ts";

/** The /health document, from a fresh read of the directory (KV: other isolates' workers). */
export async function health(ctx: RouterContext): Promise<Response> {
  await ctx.directory.refresh();
  const workers = ctx.directory.snapshot();
  return Response.json(buildHealth({
    workers,
    demand: ctx.demand.pending(workers),
    routerId: ctx.routerId,
    directory: ctx.directory.kind,
    profiles: ctx.settings.pools,
    now: Date.now(),
  }));
}
