/** GET /v1/models and GET /v1/models/{model}: the catalog with live state; never loads a model. */
import type { ModelConfig } from "../../../shared/catalog/schema.ts";
import { resolveServedName } from "../../../shared/catalog/mod.ts";
import { ServiceError } from "../../../shared/errors.ts";
import type { WorkerContext } from "../context.ts";
import { modelFromPath } from "../../../shared/catalog/model_path.ts";

/** ModelInfo of one catalog entry, with `state` and `last_error` (wire.md extras). */
export function modelInfo(ctx: WorkerContext, config: ModelConfig, name = config.id) {
  const st = ctx.registry.status(config.id);
  const profiles: Record<string, unknown> = {};
  for (const [p, v] of Object.entries(config.profiles)) {
    profiles[p] = {
      is_default: v.is_default,
      output_types: v.output_types,
      output_similarity: v.output_similarity,
    };
  }
  const embeddingDims: Record<string, number> = {};
  for (const [k, v] of Object.entries(config.dims)) {
    if (k === "dense" || k === "sparse" || k === "multivector") embeddingDims[k] = v;
  }
  return {
    name,
    inputs: config.inputs,
    outputs: config.outputs,
    dims: embeddingDims,
    loaded: st?.state === "loaded",
    max_sequence_length: config.max_sequence_length,
    profiles,
    state: st?.state ?? "available",
    last_error: st?.lastError ?? null,
    family: config.family,
    bundle: config.bundle,
  };
}

/** GET /v1/models */
export function listModels(ctx: WorkerContext): Response {
  const models = [...ctx.registry.catalog.values()].map((c) => modelInfo(ctx, c));
  return Response.json({ models });
}

/** GET /v1/models/{model} (raw or percent-encoded, `id:profile` accepted) */
export function getModel(ctx: WorkerContext, url: string): Response {
  const name = modelFromPath(url, "/v1/models/");
  const served = resolveServedName(name, ctx.registry.catalog);
  if (!served) throw new ServiceError("MODEL_NOT_FOUND", `model '${name}' is not in the catalog`);
  return Response.json(modelInfo(ctx, served.config, name));
}
