/**
 * Served names: a model is served under its id; each non-default profile is also served as
 * `id:profile` (e.g. `nomic-ai/nomic-embed-text-v1.5:matryoshka-256`).
 */
import type { ModelConfig } from "./schema.ts";
import { ServiceError } from "../errors.ts";

/** Index configs by id. Throws when two configs share an id. */
export function catalogById(configs: readonly ModelConfig[]): Map<string, ModelConfig> {
  const byId = new Map<string, ModelConfig>();
  for (const c of configs) {
    if (byId.has(c.id)) throw new Error(`duplicate model id in catalog: ${c.id}`);
    byId.set(c.id, c);
  }
  return byId;
}

/** Name of the model's default profile, or undefined when it declares none. */
export function defaultModelProfile(config: ModelConfig): string | undefined {
  for (const [name, p] of Object.entries(config.profiles)) if (p.is_default) return name;
  return undefined;
}

/** Names one model is served under: its id, then `id:profile` for each non-default profile. */
export function servedNamesOf(config: ModelConfig): string[] {
  const names = [config.id];
  for (const [name, p] of Object.entries(config.profiles)) {
    if (!p.is_default) names.push(`${config.id}:${name}`);
  }
  return names;
}

/** Every served name of the given configs, in catalog order. */
export function expandModelProfiles(configs: readonly ModelConfig[]): string[] {
  return configs.flatMap(servedNamesOf);
}

/** A served name resolved to its model and model profile. */
export interface ServedModel {
  config: ModelConfig;
  /** Model profile; for a plain id the default profile (or "default" when none is declared). */
  modelProfile: string;
}

/**
 * Resolve a served name (already percent-decoded by the caller). A plain id gives its default
 * profile; otherwise the name is split on its LAST `:` and accepted only when the part after it
 * is one of that model's profiles. Anything else gives undefined.
 */
export function resolveServedName(
  name: string,
  byId: ReadonlyMap<string, ModelConfig>,
): ServedModel | undefined {
  const exact = byId.get(name);
  if (exact) return { config: exact, modelProfile: defaultModelProfile(exact) ?? "default" };
  const colon = name.lastIndexOf(":");
  if (colon <= 0) return undefined;
  const config = byId.get(name.slice(0, colon));
  const modelProfile = name.slice(colon + 1);
  if (!config || !Object.hasOwn(config.profiles, modelProfile)) return undefined;
  return { config, modelProfile };
}

/**
 * The error for a name {@link resolveServedName} does not resolve: a known model with a profile it
 * lacks (`id:tiny`) is `400 INVALID_INPUT` naming its profiles, as a bad `options.profile` is;
 * anything else is `404 MODEL_NOT_FOUND`. `quote` is how the caller quotes names in messages.
 */
export function unresolvedNameError(
  name: string,
  byId: ReadonlyMap<string, ModelConfig>,
  quote = "'",
): ServiceError {
  const colon = name.lastIndexOf(":");
  const config = colon > 0 ? byId.get(name.slice(0, colon)) : undefined;
  if (config) {
    const modelProfiles = Object.keys(config.profiles);
    return new ServiceError(
      "INVALID_INPUT",
      `model ${quote}${config.id}${quote} has no profile ${quote}${name.slice(colon + 1)}${quote}` +
        (modelProfiles.length
          ? ` (its profiles: ${modelProfiles.join(", ")})`
          : " (it declares none)"),
    );
  }
  return new ServiceError("MODEL_NOT_FOUND", `model ${quote}${name}${quote} is not in the catalog`);
}
