/**
 * The `config` of a model in the status streams (worker and router): the catalog entry, plus the
 * names the SIE clients type for it (`hf_id`, `adapter`), so a dashboard written for them reads
 * ours.
 */
import type { ModelConfig } from "../catalog/schema.ts";
import type { StatusModelConfig } from "../schemas/status.ts";

/** A catalog entry as the status stream reports it; `extra` adds or overrides fields. */
export function statusModelConfig(
  config: ModelConfig,
  extra: Record<string, unknown> = {},
): StatusModelConfig {
  return { ...config, ...extra, hf_id: config.hub.repo, adapter: config.family };
}

/**
 * The config of a model known by its name only (an `SVC_MODELS` entry not configured yet, or a
 * model the router's catalog lacks): nothing served is claimed, `adapter` is empty, `hf_id` is
 * the repository when known, else the id.
 */
export function unconfiguredModelConfig(
  id: string,
  extra: Record<string, unknown> = {},
  hfId: string = id,
): StatusModelConfig {
  return { id, ...extra, hf_id: hfId, adapter: "", inputs: [], outputs: [], dims: {} };
}
