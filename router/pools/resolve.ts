/** Request → (pool, bundle): the machine-profile header picks the pool, the model its bundle. */
import { notInCatalogMessage } from "@svc/shared/catalog/suggest";
import { BUILTIN_CATALOG, catalogById, resolveServedName } from "@svc/shared/catalog";
import { modelBundles } from "@svc/shared/catalog/bundles";
import { isSafeModelId } from "@svc/shared/catalog/schema";
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
export interface MachineProfilePolicy {
  defaultMachineProfile: string | undefined;
  /** Profiles accepted even while no worker of theirs is registered (pools that scale to zero). */
  machineProfiles: readonly string[];
}

/** At most this many accepted profiles are named in a 400. */
const LISTED_PROFILES = 20;

/**
 * The pool a request targets: `X-SVC-MACHINE-PROFILE` (or the SIE clients' alias), else the
 * configured default, else the only pool the router accepts (the clients of other APIs, OpenAI's
 * and Cohere's, send no profile header: with one pool there is nothing to choose). With several
 * pools and no default, 400 naming them and `SVC_DEFAULT_MACHINE_PROFILE`. The SIE clients' pool
 * (`X-SIE-Pool`, or `pool/gpu` in the profile header) is honoured too, see {@link namedPool}.
 * Pools are an allow-list: configured ones (`SVC_MACHINE_PROFILES`, the default) and pools of
 * registered workers. Anything else is a 400 naming the accepted ones, before it can create
 * demand (and webhook posts) or metric series.
 */
export function requestedMachineProfile(
  headers: Headers,
  policy: MachineProfilePolicy,
  workers: readonly WorkerRecord[],
): string {
  const named = namedPool(headers, policy, workers);
  if (named === undefined) {
    if (policy.defaultMachineProfile) return policy.defaultMachineProfile;
    const pools = acceptedProfiles(policy, workers);
    if (pools.length === 1) return pools[0];
    throw new ServiceError("INVALID_INPUT", noProfileMessage(pools));
  }
  const { machineProfile } = named;
  if (isAccepted(machineProfile, policy, workers)) return machineProfile;
  throw new ServiceError(
    "INVALID_INPUT",
    unknownMachineProfileMessage(machineProfile, policy, workers),
  );
}

/** The 400 for a request that names no pool when there is not exactly one to choose. */
function noProfileMessage(pools: readonly string[]): string {
  const which = pools.length === 0
    ? "no pool is configured (SVC_MACHINE_PROFILES) and no worker has registered yet"
    : `the router accepts several pools (${listed(pools)})`;
  return `the ${H.machineProfile} header is required: ${which}; send it to name the worker ` +
    "pool (GPU type), or set SVC_DEFAULT_MACHINE_PROFILE on the router for requests without it";
}

/** The profiles the router accepts, sorted: configured, the default, registered workers' pools. */
export function acceptedProfiles(
  policy: MachineProfilePolicy,
  workers: readonly WorkerRecord[],
): string[] {
  const accepted = new Set(policy.machineProfiles);
  if (policy.defaultMachineProfile) accepted.add(policy.defaultMachineProfile);
  for (const w of workers) accepted.add(w.pool);
  return [...accepted].sort();
}

/** Names for a message, the first {@link LISTED_PROFILES} of them. */
function listed(names: readonly string[]): string {
  return names.length > LISTED_PROFILES
    ? `${names.slice(0, LISTED_PROFILES).join(", ")} and ${names.length - LISTED_PROFILES} more`
    : names.join(", ");
}

/** True when `profile` is configured (or the default) or the pool of a registered worker. */
export function isAccepted(
  machineProfile: string,
  policy: MachineProfilePolicy,
  workers: readonly WorkerRecord[],
): boolean {
  return machineProfile === policy.defaultMachineProfile ||
    policy.machineProfiles.includes(machineProfile) ||
    workers.some((w) => w.pool === machineProfile);
}

/** The pool every worker belongs to in the SIE gateway: naming it asks for no pool. */
const SIE_SHARED_POOL = "default";

/**
 * The pool the request's headers name (lower-cased), and the header that named it; undefined
 * when none does. Workers are routed by pool; the machine-profile header names the pool, as the
 * API defines it, unless the SIE clients' pool comes with it: they send `gpu: "pool/l4"` as
 * `X-SIE-Pool: pool` and `X-SIE-MACHINE-PROFILE: l4` (or the profile header as `pool/l4`, as
 * their gateway also reads it). The pool then routes, and the profile must be the machine
 * profile of the pool's registered workers (a 400 otherwise: a worker of another GPU type is
 * never chosen silently). `X-SIE-Pool: default`, the SIE gateway's pool of every worker, names
 * no pool unless a pool of that name is accepted here.
 */
function namedPool(
  headers: Headers,
  policy: MachineProfilePolicy,
  workers: readonly WorkerRecord[],
): { machineProfile: string } | undefined {
  const read = (name: string) => {
    const v = headers.get(name)?.trim().toLowerCase();
    return v ? v : undefined;
  };
  let machineProfile = read(H.machineProfile) ?? read(H.machineProfileAlias);
  let pool = read(H.siePool);
  const slash = machineProfile?.indexOf("/") ?? -1;
  if (machineProfile !== undefined && slash >= 0) {
    pool = machineProfile.slice(0, slash).trim() || pool;
    machineProfile = machineProfile.slice(slash + 1).trim() || undefined;
  }
  if (pool !== undefined && !SLUG_RE.test(pool)) {
    throw new ServiceError("INVALID_INPUT", `${H.siePool} is not a valid pool name`);
  }
  if (machineProfile !== undefined && !SLUG_RE.test(machineProfile)) {
    throw new ServiceError("INVALID_INPUT", `${H.machineProfile} is not a valid profile name`);
  }
  if (pool === SIE_SHARED_POOL && !isAccepted(pool, policy, workers)) pool = undefined;
  if (pool === undefined) {
    return machineProfile === undefined ? undefined : { machineProfile };
  }
  if (machineProfile !== undefined && machineProfile !== pool) {
    const runs = poolGpuTypes(pool, workers);
    if (runs.some((p) => p !== machineProfile)) {
      const listed = runs.map((p) => `"${p}"`).join(", ");
      throw new ServiceError(
        "INVALID_INPUT",
        `${H.siePool} "${pool}" and ${H.machineProfile} "${machineProfile}" disagree: ` +
          `the pool's workers run machine profile ${listed}; send the pool alone, or ` +
          `"pool/gpu" with its GPU type`,
      );
    }
  }
  return { machineProfile: pool };
}

/** The 400 for a profile nobody configured or registered: what is accepted instead. */
function unknownMachineProfileMessage(
  machineProfile: string,
  policy: MachineProfilePolicy,
  workers: readonly WorkerRecord[],
): string {
  const shown = listed(acceptedProfiles(policy, workers));
  return `unknown machine profile "${machineProfile}"; accepted: ${shown || "none yet"} ` +
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
  /**
   * True when nothing names the model (no worker reported it, no setting or catalog entry): it is
   * routed to {@link FALLBACK_BUNDLE} so that an empty pool can still be asked to scale up.
   */
  guessed?: boolean;
}

/** Bundle of a model nobody has named yet (workers serve `SVC_MODELS_DIR` entries there by default). */
export const FALLBACK_BUNDLE = "default";

/** A name that may be routed without being known: a safe id, optionally `:profile`. */
function isRoutableName(name: string): boolean {
  const colon = name.lastIndexOf(":");
  if (colon < 0) return isSafeModelId(name);
  return isSafeModelId(name.slice(0, colon)) && SLUG_RE.test(name.slice(colon + 1));
}

/** `name`, or the id of an `id:profile` name, looked up in `bundles`. */
function lookUp(name: string, bundles: ReadonlyMap<string, string>): ModelRoute | undefined {
  const exact = bundles.get(name);
  if (exact !== undefined) return { bundle: exact, model: name };
  const colon = name.lastIndexOf(":");
  if (colon > 0) {
    const base = name.slice(0, colon);
    const baseBundle = bundles.get(base);
    if (baseBundle !== undefined) return { bundle: baseBundle, model: base };
  }
  return undefined;
}

/**
 * Route a served name: names workers reported first (they know their extra catalog entries),
 * then `SVC_EXTRA_MODELS` (`extra`), each also as `id:profile` of a known id (the worker checks
 * the profile), then the built-in catalog (which validates profiles itself), and last, for a
 * well-formed id nobody named, {@link FALLBACK_BUNDLE} (`guessed`). Undefined: a name that cannot
 * be a model id (404).
 */
export function routeModel(
  name: string,
  directory: WorkerDirectory,
  extra: ReadonlyMap<string, string> = new Map(),
): ModelRoute | undefined {
  const known = lookUp(name, directory.learnedBundles()) ?? lookUp(name, extra);
  if (known !== undefined) return known;
  const catalogBundle = CATALOG_BUNDLES.get(name);
  if (catalogBundle !== undefined) {
    return {
      bundle: catalogBundle,
      model: resolveServedName(name, CATALOG_BY_ID)?.config.id ?? name,
    };
  }
  return isRoutableName(name) ? { bundle: FALLBACK_BUNDLE, model: name, guessed: true } : undefined;
}

/**
 * Every model name the router knows, once each: what live workers announce, what workers
 * reported before (remembered), `SVC_EXTRA_MODELS`, and the built-in catalog's served names.
 * Once each, so that many workers serving the same models do not use up the suggestions' bound
 * on candidates before the catalog is reached.
 */
export function knownModelNames(
  directory: WorkerDirectory,
  extra: ReadonlyMap<string, string> = new Map(),
): Set<string> {
  const names = new Set<string>();
  for (const w of directory.snapshot()) for (const m of w.models) names.add(m.name);
  for (const name of directory.learnedBundles().keys()) names.add(name);
  for (const name of extra.keys()) names.add(name);
  for (const name of CATALOG_BUNDLES.keys()) names.add(name);
  return names;
}

/** The router's 404 for a model name: it names the closest names the router knows. */
export function modelNotFound(
  model: string,
  directory: WorkerDirectory,
  extra: ReadonlyMap<string, string> = new Map(),
  why = "is not in the catalog",
): ServiceError {
  return new ServiceError(
    "MODEL_NOT_FOUND",
    notInCatalogMessage(model, knownModelNames(directory, extra), '"', why),
  );
}

/** The machine profiles a pool's registered workers run, sorted (empty while it has none). */
export function poolGpuTypes(name: string, workers: readonly WorkerRecord[]): string[] {
  return [...new Set(workers.filter((w) => w.pool === name).map((w) => w.machine_profile))].sort();
}
