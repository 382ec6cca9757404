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
import type { WorkerRecord } from "../directory/types.ts";

/** The drain route's path pattern (Hono syntax). */
export const DRAIN_PATH = "/v1/admin/workers/:id/drain";

/**
 * Mark one worker draining. Held here: at once. Held by another router instance (KV mode): a
 * mark in KV that instance carries out; answered once the shared directory shows the drain
 * (202 if that takes longer than the wait). 404 when no instance holds the worker.
 */
export async function handleDrainWorker(
  ctx: RouterContext,
  c: Context<RouterEnv>,
): Promise<Response> {
  const id = c.req.param("id") ?? "";
  if (!WORKER_ID_RE.test(id)) throw invalidInput("invalid worker id");
  const local = await ctx.hub.drainWorker(id);
  // Its connections to other instances (a worker linked to several) are drained by a mark.
  if (local?.instance_hash !== undefined) {
    await ctx.drains?.request(id, local.conn_id, local.instance_hash);
  }
  const record = local ?? await drainElsewhere(ctx, id);
  if (record === "requested") {
    return Response.json({ worker_id: id, state: "drain_requested" }, { status: 202 });
  }
  if (!record) {
    throw new ServiceError(
      "NOT_FOUND",
      ctx.drains
        ? `no router instance holds worker "${id}"; see GET /health`
        : `worker "${id}" is not connected to this router (${ctx.routerId}); see GET /health`,
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

/** How long a drain sent to another instance is waited for before a 202. */
const REMOTE_DRAIN_WAIT_MS = 3000;

/** Leave a drain mark for the instance holding `id`, and wait to see it carried out. */
async function drainElsewhere(
  ctx: RouterContext,
  id: string,
): Promise<WorkerRecord | "requested" | undefined> {
  if (!ctx.drains) return undefined;
  await ctx.directory.refresh();
  const held = ctx.directory.snapshot().find((w) => w.id === id);
  if (!held) return undefined;
  if (held.draining) return held;
  await ctx.drains.request(id, held.conn_id, held.instance_hash);
  const deadline = Date.now() + REMOTE_DRAIN_WAIT_MS;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    await ctx.directory.refresh();
    const now = ctx.directory.snapshot().find((w) => w.id === id);
    if (now?.draining) return now;
  }
  return "requested";
}
