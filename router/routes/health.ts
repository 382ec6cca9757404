/** GET /health: the fleet at a glance (workers, pools, models, pending demand). */
import type { RouterContext } from "../context.ts";
import { buildHealth } from "../health.ts";
import { clientHealth } from "../views/health_view.ts";
import { boundView } from "../views/bounds.ts";

/**
 * The /health document, from a fresh read of the directory (KV: other isolates' workers): in full
 * with fleet detail rights (`detail`), else the capacity summary.
 */
export async function health(ctx: RouterContext, detail: boolean): Promise<Response> {
  await ctx.directory.refresh();
  const workers = ctx.directory.snapshot();
  const body = boundView(
    buildHealth({
      workers,
      demand: ctx.demand.pending(workers),
      routerId: ctx.routerId,
      directory: ctx.directory.kind,
      profiles: ctx.settings.pools,
      now: Date.now(),
    }),
    ctx.settings.views,
  );
  return Response.json(detail ? body : clientHealth(body));
}
