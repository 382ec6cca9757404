/** Checks shared by the model operations: the model exists, serves this op, belongs to our bundle. */
import type { ServedModel } from "@svc/shared/catalog";
import { ALL_BUNDLES } from "@svc/shared/catalog/bundles";
import { invalidInput, ServiceError } from "@svc/shared/errors";
import { familyOp, familyServes } from "../families/kinds.ts";
import type { WorkerContext } from "./context.ts";

/** The bundle a model is announced under by a worker serving `workerBundle`. */
export function announcedBundle(modelBundle: string, workerBundle: string): string {
  // A worker serving every bundle announces each model under its own name, so the router sends
  // every model to it (names workers report route before the built-in catalog's bundles).
  return workerBundle === ALL_BUNDLES ? ALL_BUNDLES : modelBundle;
}

/** A model operation. */
export type ModelOp = "encode" | "score" | "extract";

/**
 * The routes of another API's clients (by path): which of its routes runs each operation, so
 * that a hint names a route the client can call (Cohere's `/v2/embed` on a reranker points to
 * `/v2/rerank`). An operation the API lacks is pointed to the native route.
 */
const COMPAT_ROUTES: Readonly<Record<string, Partial<Record<ModelOp, string>>>> = {
  "/v1/embed": { encode: "/v1/embed", score: "/v1/rerank" },
  "/v2/embed": { encode: "/v2/embed", score: "/v2/rerank" },
  "/v1/rerank": { encode: "/v1/embed", score: "/v1/rerank" },
  "/v2/rerank": { encode: "/v2/embed", score: "/v2/rerank" },
  "/v1/embeddings": { encode: "/v1/embeddings" },
};

/** The hint for a model that does not serve `op`: the route to use instead, by the client's API. */
function wrongRouteMessage(c: ServedModel["config"], op: ModelOp, usedPath?: string): string {
  const modelOp = familyOp(c.family);
  const compat = usedPath === undefined ? undefined : COMPAT_ROUTES[usedPath];
  if (compat === undefined) {
    return `model '${c.id}' is a ${c.family} model: use /v1/${modelOp}/, not /v1/${op}/`;
  }
  const instead = compat[modelOp] ?? `/v1/${modelOp}/${c.id}`;
  return `model '${c.id}' is a ${c.family} model: use ${instead}, not ${usedPath}`;
}

/**
 * Resolve a served name for an operation, or throw the matching API error; `usedPath` is the
 * route of another API the client called (its hint then names that API's route).
 */
export function gateModel(
  ctx: WorkerContext,
  name: string,
  op: ModelOp,
  usedPath?: string,
): ServedModel {
  const served = ctx.catalog.resolve(name);
  const c = served.config;
  if (!familyServes(c.family, op)) throw invalidInput(wrongRouteMessage(c, op, usedPath));
  if (c.bundle !== ctx.bundle && ctx.bundle !== ALL_BUNDLES) {
    throw new ServiceError(
      "DEPENDENCY_CONFLICT",
      `model '${c.id}' belongs to bundle '${c.bundle}'; this worker serves bundle '${ctx.bundle}'`,
    );
  }
  return served;
}
