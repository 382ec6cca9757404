/** Request → (pool, bundle): the machine-profile header picks the pool, the model its bundle. */
import { BUILTIN_CATALOG } from "../../shared/catalog/mod.ts";
import { modelBundles } from "../../shared/catalog/bundles.ts";
import { ServiceError } from "../../shared/errors.ts";
import { Headers as H } from "../../shared/headers.ts";
import { SLUG_RE } from "../../shared/fleet/protocol.ts";
import type { WorkerDirectory } from "../directory/types.ts";

/**
 * Built-in served name → bundle, part of the router's code bundle: it knows which pool serves a
 * model even when every pool is scaled to zero (202, not 404).
 */
const CATALOG_BUNDLES: ReadonlyMap<string, string> = new Map(
  Object.entries(modelBundles(BUILTIN_CATALOG)),
);

/** Settings that shape profile selection. */
export interface ProfilePolicy {
  defaultMachineProfile: string | undefined;
  /** Non-empty: the only profiles a request may name. */
  machineProfiles: readonly string[];
}

/**
 * The pool a request targets: `X-SVC-MACHINE-PROFILE` (or the SIE clients' alias), else the
 * configured default; without either, 400 saying the header is required.
 */
export function machineProfileOf(headers: globalThis.Headers, policy: ProfilePolicy): string {
  const raw = headers.get(H.machineProfile) ?? headers.get(H.machineProfileAlias);
  if (raw === null || raw.trim() === "") {
    if (policy.defaultMachineProfile) return policy.defaultMachineProfile;
    throw new ServiceError(
      "INVALID_INPUT",
      `the ${H.machineProfile} header is required: it names the worker pool (GPU type)`,
    );
  }
  const profile = raw.trim().toLowerCase();
  if (!SLUG_RE.test(profile)) {
    throw new ServiceError("INVALID_INPUT", `${H.machineProfile} is not a valid profile name`);
  }
  if (policy.machineProfiles.length > 0 && !policy.machineProfiles.includes(profile)) {
    throw new ServiceError(
      "INVALID_INPUT",
      `unknown machine profile "${profile}"; known: ${policy.machineProfiles.join(", ")}`,
    );
  }
  return profile;
}

/** The bundle serving `model`: what workers reported first, then the built-in catalog. */
export function bundleOf(model: string, directory: WorkerDirectory): string | undefined {
  return directory.learnedBundles().get(model) ?? CATALOG_BUNDLES.get(model);
}

/** True when the built-in catalog knows the served name. */
export function inBuiltinCatalog(model: string): boolean {
  return CATALOG_BUNDLES.has(model);
}

/** Decode a model path segment sent raw or percent-encoded (`BAAI%2Fbge-m3`). */
export function decodeModelName(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new ServiceError("INVALID_INPUT", "model name is not valid percent-encoding");
  }
}
