/** GET /v1/models and GET /v1/models/{model}: the catalog with live state; never loads a model. */
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { resolveServedName } from "@svc/shared/catalog";
import {
  modelDocument,
  modelInfoOf,
  modelListBody,
  pendingModelInfo,
} from "@svc/shared/catalog/model_info";
import type { WorkerContext } from "../context.ts";
import { modelFromPath } from "@svc/shared/catalog/model_path";

/**
 * ModelInfo of one catalog entry with its live state (never loads the model). Under a profile's
 * name it reports that profile: its dims, and the state of the weights file it runs.
 */
export function modelInfo(
  ctx: WorkerContext,
  config: ModelConfig,
  name = config.id,
  modelProfile?: string,
) {
  const st = modelProfile === undefined
    ? ctx.registry.status(config.id)
    : ctx.registry.servedStatus({ config, modelProfile });
  return modelInfoOf(config, {
    name,
    modelProfile,
    state: st?.state,
    lastError: st?.lastError,
    loras: st?.loras,
    maxSequenceLength: ctx.catalog.declaredMaxLength(config.id),
    maxItemTokens: config.max_sequence_length,
    quantization: st?.quantization,
    files: st?.files,
  });
}

/** GET /v1/models: the catalog, then the SVC_MODELS entries still pending (loading or failed). */
export function listModels(ctx: WorkerContext): Response {
  const models = [
    ...[...ctx.catalog.entries.values()].map((c) => modelInfo(ctx, c)),
    ...ctx.catalog.pendingEntries().map(pendingModelInfo),
  ];
  return Response.json(modelListBody(models));
}

/** GET /v1/models/{model} (raw or percent-encoded, `id:profile` accepted) */
export function getModel(ctx: WorkerContext, url: string): Response {
  const name = modelFromPath(url, "/v1/models/");
  const served = resolveServedName(name, ctx.catalog.entries);
  if (served) {
    return Response.json(modelDocument(modelInfo(ctx, served.config, name, served.modelProfile)));
  }
  const pending = ctx.catalog.pendingEntries().find((p) => p.id === name);
  if (pending) return Response.json(modelDocument(pendingModelInfo(pending)));
  throw ctx.catalog.unknownName(name);
}
