/**
 * Worker-pool bundles: each bundle is its own pool. The router uses `modelBundles` to pick the
 * pool for a model name taken from the request path.
 */
import type { ModelConfig } from "./schema.ts";
import { servedNamesOf } from "./served_names.ts";

/**
 * Bundles of the built-in catalog: `default` serves encode and score models (and CLIP),
 * `extract` serves entity, zero-shot and detection models.
 */
export const BUNDLE_NAMES = ["default", "extract"] as const;
export type BundleName = typeof BUNDLE_NAMES[number];

/**
 * The bundle name of a worker that serves every bundle (`SVC_BUNDLE=all`, `deno task start`): it
 * announces each of its models under this name, and the router trusts that list to be complete.
 */
export const ALL_BUNDLES = "all";

/** True when `name` is one of BUNDLE_NAMES. */
export function isBundleName(name: string): name is BundleName {
  return (BUNDLE_NAMES as readonly string[]).includes(name);
}

/**
 * Served name → bundle. Keys are every model id and every `id:profile` name (a profile is served
 * by the same pool as its model), so the router can look a path name up directly.
 */
export function modelBundles(configs: readonly ModelConfig[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of configs) {
    for (const name of servedNamesOf(c)) {
      if (Object.hasOwn(out, name) && out[name] !== c.bundle) {
        throw new Error(`model ${name} is listed in two bundles: ${out[name]} and ${c.bundle}`);
      }
      out[name] = c.bundle;
    }
  }
  return out;
}

/** Distinct bundles used by the given configs, sorted. */
export function bundlesOf(configs: readonly ModelConfig[]): string[] {
  return [...new Set(configs.map((c) => c.bundle))].sort();
}
