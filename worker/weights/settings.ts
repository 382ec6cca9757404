/**
 * The weight store built from the worker's weight settings (model directories, cache, cluster
 * cache, hub), and the repository lister over the same sources.
 */
import { createClusterCacheSource } from "./cluster_cache.ts";
import { createDirectorySource } from "./directory.ts";
import { createHubSource } from "./hub.ts";
import { createRepoLister, type RepoLister } from "./listing.ts";
import { createWeightStore } from "./store.ts";
import type { WeightFetchEvent, WeightSource, WeightStore } from "./types.ts";

/** The weight slice of the worker's settings (worker/config/settings.ts). */
export interface WeightSettings {
  /** SVC_CACHE_DIR, resolved to its default when unset. */
  cacheDir: string;
  clusterCache: string | undefined;
  hubUrl: string;
  /** HF_TOKEN; keep it out of logs (see {@link describeWeightSettings}). */
  token: string | undefined;
  timeoutMs: number;
  idleTimeoutMs: number;
  maxParallel: number;
  /** SVC_HUB_DISABLED (air-gapped machines): never call the hub. */
  hubDisabled: boolean;
  /**
   * Repositories served from local directories (`SVC_MODELS` entries `ID=DIRECTORY`): id →
   * absolute path. Their files are read in place and never asked of another source.
   */
  directories?: ReadonlyMap<string, string>;
  /** `SVC_MODELS_FOLLOW_LINKS`: a directory's files may be links to files outside it. */
  followLinks?: boolean;
}

/** The settings as a loggable string: the token only as "set"/"unset". */
export function describeWeightSettings(s: WeightSettings): string {
  return `cacheDir=${s.cacheDir} clusterCache=${s.clusterCache ? "set" : "unset"} ` +
    `hub=${s.hubDisabled ? "disabled" : s.hubUrl} HF_TOKEN=${s.token ? "set" : "unset"} ` +
    `timeoutMs=${s.timeoutMs} idleTimeoutMs=${s.idleTimeoutMs} maxParallel=${s.maxParallel}`;
}

/**
 * Sources in the documented order: model directories (when any), cluster cache (when
 * configured), then the hub.
 */
export function weightSourcesFrom(s: WeightSettings, fetchImpl?: typeof fetch): WeightSource[] {
  const http = { timeoutMs: s.timeoutMs, idleTimeoutMs: s.idleTimeoutMs, fetch: fetchImpl };
  const sources: WeightSource[] = [];
  if (s.directories && s.directories.size > 0) {
    sources.push(createDirectorySource(s.directories, s.followLinks));
  }
  if (s.clusterCache) sources.push(createClusterCacheSource({ location: s.clusterCache, ...http }));
  if (!s.hubDisabled) sources.push(createHubSource({ hubUrl: s.hubUrl, token: s.token, ...http }));
  return sources;
}

/** A WeightStore configured by the weight settings. */
export function weightStoreFrom(
  settings: WeightSettings,
  onFetch?: (event: WeightFetchEvent) => void,
): WeightStore {
  return createWeightStore({
    cacheDir: settings.cacheDir,
    sources: weightSourcesFrom(settings),
    maxParallel: settings.maxParallel,
    onFetch,
  });
}

/** A lister of repository files over the same sources as {@link weightStoreFrom}. */
export function repoListerFrom(settings: WeightSettings): RepoLister {
  return createRepoLister({ cacheDir: settings.cacheDir, sources: weightSourcesFrom(settings) });
}
