/** GET /health: the fleet at a glance (workers, pools, models, pending demand). */
import type { RouterContext } from "../context.ts";
import { forwardedTo, WindowRates } from "../dashboard/rates.ts";
import { buildHealth } from "../health.ts";
import { clientHealth } from "../views/health_view.ts";
import { boundView } from "../views/bounds.ts";

/** The forwarded-request counts each router app's /health saw, for `cluster.total_qps`. */
const RATES = new WeakMap<RouterContext, WindowRates>();

/**
 * The /health document, from a fresh read of the directory (KV: other isolates' workers): in full
 * with fleet detail rights (`detail`), else the capacity summary. `cluster.total_qps` is the
 * forwarding rate since earlier calls, over the last seconds (0 on a first call).
 */
export async function health(ctx: RouterContext, detail: boolean): Promise<Response> {
  await ctx.directory.refresh();
  const workers = ctx.directory.snapshot();
  const now = Date.now();
  let rates = RATES.get(ctx);
  if (!rates) RATES.set(ctx, rates = new WindowRates());
  const forwarded = await forwardedTo(ctx.metrics, workers);
  let qps = 0;
  for (const r of rates.sample(forwarded, now).values()) qps += r;
  const body = boundView(
    buildHealth({
      workers,
      demand: ctx.demand.pending(workers),
      routerId: ctx.routerId,
      directory: ctx.directory.kind,
      pools: ctx.settings.pools,
      now,
      totalQps: Math.round(qps * 100) / 100,
    }),
    ctx.settings.views,
  );
  return Response.json(detail ? body : clientHealth(body));
}
