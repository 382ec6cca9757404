/** GET /v1/models and /v1/models/{model}: the catalog as the live fleet (or the named pool) sees it. */
import type { Context } from "hono";
import { modelFromPath } from "@svc/shared/catalog/model_path";
import { modelDocument, modelListBody } from "@svc/shared/catalog/model_info";
import { ServiceError } from "@svc/shared/errors";
import { HeaderNames as H } from "@svc/shared/headers";
import type { RouterContext, RouterEnv } from "../context.ts";
import type { WorkerRecord } from "../directory/types.ts";
import { getModel, listModels } from "../models.ts";
import { modelNotFound, requestedMachineProfile } from "../pools/resolve.ts";
import { modelsOf } from "../pools/selection.ts";
import { BUILTIN_CATALOG, catalogById, unresolvedNameError } from "@svc/shared/catalog";

const CATALOG_BY_ID = catalogById(BUILTIN_CATALOG);

/** GET /v1/models */
export async function handleListModels(
  ctx: RouterContext,
  c: Context<RouterEnv>,
): Promise<Response> {
  const models = await listModels(
    scopedWorkers(ctx, c),
    ctx.log,
    ctx.fetch,
    ctx.workerAuth,
    (w) => ctx.hub.streamsOf(w.id, w.conn_id),
  );
  return Response.json(modelListBody(models));
}

/** GET /v1/models/{model} (raw or percent-encoded, `id:profile` accepted) */
export async function handleGetModel(
  ctx: RouterContext,
  c: Context<RouterEnv>,
): Promise<Response> {
  const model = modelFromPath(c.req.url, "/v1/models/");
  const info = await getModel(
    scopedWorkers(ctx, c),
    model,
    ctx.log,
    ctx.fetch,
    ctx.workerAuth,
    (w) => ctx.hub.streamsOf(w.id, w.conn_id),
  );
  if (!info) throw unknownModel(ctx, model, scopedWorkers(ctx, c));
  return Response.json(modelDocument(info));
}

/**
 * 404 for a name nobody serves (naming the closest known names), but 400 for `id:profile` of a
 * model that is served or built in (its profile is unknown: what a bad `options.profile` answers
 * too).
 */
function unknownModel(
  ctx: RouterContext,
  model: string,
  workers: readonly WorkerRecord[],
): ServiceError {
  const colon = model.lastIndexOf(":");
  const id = colon > 0 ? model.slice(0, colon) : "";
  if (CATALOG_BY_ID.has(id)) return unresolvedNameError(model, CATALOG_BY_ID, '"');
  if (id && workers.some((w) => modelsOf(w).has(id))) {
    return new ServiceError(
      "INVALID_INPUT",
      `model "${id}" has no profile "${model.slice(colon + 1)}" (GET /v1/models/` +
        `${encodeURIComponent(id)} lists its profiles)`,
    );
  }
  return modelNotFound(model, ctx.directory, ctx.settings.pools.extraModels);
}

/** Live workers, restricted to the pool the client named (if it named one). */
function scopedWorkers(ctx: RouterContext, c: Context<RouterEnv>): WorkerRecord[] {
  const named = c.req.header(H.machineProfile) ?? c.req.header(H.machineProfileAlias) ??
    c.req.header(H.siePool);
  const all = ctx.directory.snapshot();
  if (!named) return [...all];
  const machineProfile = requestedMachineProfile(c.req.raw.headers, ctx.settings.pools, all);
  c.set("machineProfile", machineProfile);
  return all.filter((w) => w.pool === machineProfile);
}
