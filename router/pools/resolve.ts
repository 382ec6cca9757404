/** Request → (pool, bundle): the machine-profile header picks the pool, the model its bundle. */
import { BUILTIN_CATALOG, catalogById, resolveServedName } from "@svc/shared/catalog";
import { modelBundles } from "@svc/shared/catalog/bundles";
import { ServiceError } from "@svc/shared/errors";
import { HeaderNames as H } from "@svc/shared/headers";
import { SLUG_RE } from "@svc/shared/fleet/protocol";
import type { WorkerDirectory, WorkerRecord } from "../directory/types.ts";

/**
 * Built-in served name → bundle, part of the router's code bundle: it knows which pool serves a
 * model even when every pool is scaled to zero (202, not 404).
 */
const CATALOG_BUNDLES: ReadonlyMap<string, string> = new Map(
  Object.entries(modelBundles(BUILTIN_CATALOG)),
);

/** Built-in configs by id, to map a served `id:profile` name to the model workers register. */
const CATALOG_BY_ID = catalogById(BUILTIN_CATALOG);

/** Settings that shape profile selection. */
export interface ProfilePolicy {
  defaultMachineProfile: string | undefined;
  /** Profiles accepted even while no worker of theirs is registered (pools that scale to zero). */
  machineProfiles: readonly string[];
}

/** At most this many accepted profiles are named in a 400. */
const LISTED_PROFILES = 20;

/**
 * The pool a request targets: `X-SVC-MACHINE-PROFILE` (or the SIE clients' alias), else the
 * configured default; without either, 400 saying the header is required. Profiles are an
 * allow-list: configured ones (`SVC_MACHINE_PROFILES`, the default) and pools of registered
 * workers. Anything else is a 400 naming the accepted ones, before it can create demand (and
 * webhook posts) or metric series.
 */
export function requestedProfile(
  headers: Headers,
  policy: ProfilePolicy,
  workers: readonly WorkerRecord[],
): string {
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
  if (
    profile === policy.defaultMachineProfile || policy.machineProfiles.includes(profile) ||
    workers.some((w) => w.pool === profile)
  ) {
    return profile;
  }
  throw new ServiceError("INVALID_INPUT", unknownProfileMessage(profile, policy, workers));
}

/** The 400 for a profile nobody configured or registered: what is accepted instead. */
function unknownProfileMessage(
  profile: string,
  policy: ProfilePolicy,
  workers: readonly WorkerRecord[],
): string {
  const accepted = new Set(policy.machineProfiles);
  if (policy.defaultMachineProfile) accepted.add(policy.defaultMachineProfile);
  for (const w of workers) accepted.add(w.pool);
  const names = [...accepted].sort();
  const shown = names.length > LISTED_PROFILES
    ? `${names.slice(0, LISTED_PROFILES).join(", ")} and ${names.length - LISTED_PROFILES} more`
    : names.join(", ");
  return `unknown machine profile "${profile}"; accepted: ${shown || "none yet"} ` +
    "(SVC_MACHINE_PROFILES, SVC_DEFAULT_MACHINE_PROFILE, or the pool of a registered worker)";
}

/** Where a served name is routed: its bundle, and the model name workers register it under. */
export interface ModelRoute {
  bundle: string;
  /**
   * Name looked up in the workers' model lists (load state, affinity). Workers register model
   * ids; a profile name `id:profile` is served by the same loaded model, so it routes as `id`.
   */
  model: string;
}

/**
 * Route a served name: names workers reported first (they know their extra catalog entries),
 * then `id:profile` of a reported id (the worker checks the profile), then the built-in catalog
 * (which validates profiles itself). Undefined: nobody knows the model (404).
 */
export function routeModel(name: string, directory: WorkerDirectory): ModelRoute | undefined {
  const learned = directory.learnedBundles();
  const exact = learned.get(name);
  if (exact !== undefined) return { bundle: exact, model: name };
  const colon = name.lastIndexOf(":");
  if (colon > 0) {
    const base = name.slice(0, colon);
    const baseBundle = learned.get(base);
    if (baseBundle !== undefined) return { bundle: baseBundle, model: base };
  }
  const catalogBundle = CATALOG_BUNDLES.get(name);
  if (catalogBundle === undefined) return undefined;
  return {
    bundle: catalogBundle,
    model: resolveServedName(name, CATALOG_BY_ID)?.config.id ?? name,
  };
}
