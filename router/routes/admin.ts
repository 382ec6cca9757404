/**
 * Operator actions under /v1/admin, behind the API keys like every /v1 path; with no keys set only
 * a client on the router's own machine may take them (router/admin_access.ts).
 * `POST /v1/admin/workers/{id}/drain`: the router stops sending new requests to that worker; work
 * already there finishes. Used by `deno task drain`.
 */
import type { Context } from "hono";
import { invalidInput, ServiceError } from "@svc/shared/errors";
import { WORKER_ID_RE } from "@svc/shared/fleet/protocol";
import type { RouterContext, RouterEnv } from "../context.ts";
import { adminRefusal } from "../admin_access.ts";

/** The drain route's path pattern (Hono syntax). */
export const DRAIN_PATH = "/v1/admin/workers/:id/drain";

/** Mark one worker draining; 404 when no socket of this router holds it. */
export async function handleDrainWorker(
  ctx: RouterContext,
  c: Context<RouterEnv>,
): Promise<Response> {
  const refused = adminRefusal(ctx.apiKeys, {
    headers: c.req.raw.headers,
    remoteHostname: c.env?.remoteAddr?.hostname,
  });
  if (refused) throw refused;
  const id = c.req.param("id") ?? "";
  if (!WORKER_ID_RE.test(id)) throw invalidInput("invalid worker id");
  const record = await ctx.hub.drainWorker(id);
  if (!record) {
    throw new ServiceError(
      "NOT_FOUND",
      `worker "${id}" is not connected to this router (${ctx.routerId}); see GET /health`,
    );
  }
  return Response.json({
    worker_id: record.id,
    state: "draining",
    in_flight: record.in_flight,
    queue_depth: record.queue_depth,
  });
}
