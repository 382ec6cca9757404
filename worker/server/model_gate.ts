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

/** Resolve a served name for an operation, or throw the matching API error. */
export function gateModel(
  ctx: WorkerContext,
  name: string,
  op: "encode" | "score" | "extract",
): ServedModel {
  const served = ctx.catalog.resolve(name);
  const c = served.config;
  const modelOp = familyOp(c.family);
  if (!familyServes(c.family, op)) {
    throw invalidInput(
      `model '${c.id}' is a ${c.family} model: use /v1/${modelOp}/, not /v1/${op}/`,
    );
  }
  if (c.bundle !== ctx.bundle && ctx.bundle !== ALL_BUNDLES) {
    throw new ServiceError(
      "DEPENDENCY_CONFLICT",
      `model '${c.id}' belongs to bundle '${c.bundle}'; this worker serves bundle '${ctx.bundle}'`,
    );
  }
  return served;
}
