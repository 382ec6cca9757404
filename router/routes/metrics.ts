/** GET /metrics: the Prometheus exposition (open even when API keys are configured). */
import type { RouterContext } from "../context.ts";

/** Every router series, collectors run first. */
export async function metrics(ctx: RouterContext): Promise<Response> {
  const body = await ctx.metrics.registry.render();
  return new Response(body, { headers: { "content-type": ctx.metrics.registry.contentType } });
}
