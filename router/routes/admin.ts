/**
 * Operator actions under /v1/admin, behind admin rights (router/auth/access.ts: an admin key, or
 * a local stack asked from its own machine): a client key is refused, since it would let any
 * client take workers out of service.
 * `POST /v1/admin/workers/{id}/drain`: the router stops sending new requests to that worker; work
 * already there finishes. Used by `deno task drain`.
 */
import type { Context } from "hono";
import { invalidInput, ServiceError } from "@svc/shared/errors";
import { WORKER_ID_RE } from "@svc/shared/fleet/protocol";
import type { RouterContext, RouterEnv } from "../context.ts";

/** The drain route's path pattern (Hono syntax). */
export const DRAIN_PATH = "/v1/admin/workers/:id/drain";

/** Mark one worker draining; 404 when no socket of this router holds it. */
export async function handleDrainWorker(
  ctx: RouterContext,
  c: Context<RouterEnv>,
): Promise<Response> {
  const id = c.req.param("id") ?? "";
  if (!WORKER_ID_RE.test(id)) throw invalidInput("invalid worker id");
  const record = await ctx.hub.drainWorker(id);
  if (!record) {
    throw new ServiceError(
      "NOT_FOUND",
      `worker "${id}" is not connected to this router (${ctx.routerId}); see GET /health`,
    );
  }
  // A worker drained for cause vouches for nothing it answered: its cached answers go now.
  ctx.cache?.purgeWorker(record);
  return Response.json({
    worker_id: record.id,
    state: "draining",
    in_flight: record.in_flight,
    queue_depth: record.queue_depth,
  });
}
