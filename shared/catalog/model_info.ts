/** The ModelInfo document of a catalog entry: one builder for worker and router. */
import type { ModelInfo, ModelState } from "../schemas/models.ts";
import type { ErrorCode } from "../errors.ts";
import type { ModelConfig } from "./schema.ts";

/** ModelInfo plus the extras both sides send (`family`, `bundle`). */
export type CatalogModelInfo = ModelInfo & { family: string; bundle: string };

/**
 * ModelInfo of `config` served under `name` (its id, or `id:profile`), with live `state` and
 * `last_error` when the caller knows them. `dims` lists embedding outputs only (a reranker's
 * is empty, as the API says).
 */
export function modelInfoOf(
  config: ModelConfig,
  live: {
    name?: string;
    state?: ModelState;
    lastError?: { code: ErrorCode; message: string } | null;
  } = {},
): CatalogModelInfo {
  const profiles: ModelInfo["profiles"] = {};
  for (const [p, v] of Object.entries(config.profiles)) {
    profiles[p] = {
      is_default: v.is_default,
      output_types: v.output_types,
      output_similarity: v.output_similarity,
    };
  }
  const dims: Record<string, number> = {};
  for (const [k, v] of Object.entries(config.dims)) {
    if (k === "dense" || k === "sparse" || k === "multivector") dims[k] = v;
  }
  const state = live.state ?? "available";
  return {
    name: live.name ?? config.id,
    inputs: config.inputs,
    outputs: config.outputs,
    dims,
    loaded: state === "loaded",
    max_sequence_length: config.max_sequence_length,
    profiles,
    state,
    last_error: live.lastError ?? null,
    family: config.family,
    bundle: config.bundle,
  };
}
