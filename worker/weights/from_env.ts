/** Builds the weight store from environment settings (SVC_CACHE_DIR, SVC_CLUSTER_CACHE, ...). */
import { join } from "node:path";
import { ServiceError } from "@svc/shared/errors";
import { createClusterCacheSource } from "./cluster_cache.ts";
import { createHubSource, DEFAULT_HUB_URL } from "./hub.ts";
import { createWeightStore, DEFAULT_MAX_PARALLEL } from "./store.ts";
import type { WeightFetchEvent, WeightSource, WeightStore } from "./types.ts";
import { DEFAULT_HTTP_TIMEOUT_MS } from "./http.ts";
import { DEFAULT_IDLE_TIMEOUT_MS } from "./atomic_file.ts";

/** Reads one environment variable; injectable for tests. */
export type EnvGetter = (name: string) => string | undefined;

/** The weight settings, resolved from the environment with their defaults. */
export interface WeightSettings {
  cacheDir: string;
  clusterCache?: string;
  hubUrl: string;
  /** HF_TOKEN; keep it out of logs (see {@link describeWeightSettings}). */
  token?: string;
  timeoutMs: number;
  idleTimeoutMs: number;
  maxParallel: number;
  /** SVC_HUB_DISABLED=1 (air-gapped machines): never call the hub. */
  hubDisabled: boolean;
}

/** Reads SVC_CACHE_DIR, SVC_CLUSTER_CACHE, SVC_HUB_URL, HF_TOKEN and the SVC_WEIGHTS_* knobs. */
export function readWeightSettings(env: EnvGetter = (name) => Deno.env.get(name)): WeightSettings {
  const home = env("HOME");
  const defaultCache = home ? join(home, ".cache", "svc", "models") : "/tmp/svc-models";
  return {
    cacheDir: env("SVC_CACHE_DIR") || defaultCache,
    clusterCache: env("SVC_CLUSTER_CACHE") || undefined,
    hubUrl: env("SVC_HUB_URL") || DEFAULT_HUB_URL,
    token: env("HF_TOKEN") || undefined,
    timeoutMs: positiveInt(env, "SVC_WEIGHTS_HTTP_TIMEOUT_MS", DEFAULT_HTTP_TIMEOUT_MS),
    idleTimeoutMs: positiveInt(env, "SVC_WEIGHTS_IDLE_TIMEOUT_MS", DEFAULT_IDLE_TIMEOUT_MS),
    maxParallel: positiveInt(env, "SVC_WEIGHTS_MAX_PARALLEL", DEFAULT_MAX_PARALLEL),
    hubDisabled: ["1", "true"].includes((env("SVC_HUB_DISABLED") ?? "").toLowerCase()),
  };
}

/** The settings as a loggable string: the token only as "set"/"unset". */
export function describeWeightSettings(s: WeightSettings): string {
  return `cacheDir=${s.cacheDir} clusterCache=${s.clusterCache ? "set" : "unset"} ` +
    `hub=${s.hubDisabled ? "disabled" : s.hubUrl} HF_TOKEN=${s.token ? "set" : "unset"} ` +
    `timeoutMs=${s.timeoutMs} idleTimeoutMs=${s.idleTimeoutMs} maxParallel=${s.maxParallel}`;
}

/** Sources in the documented order: cluster cache (when configured), then the hub. */
export function weightSourcesFrom(s: WeightSettings, fetchImpl?: typeof fetch): WeightSource[] {
  const http = { timeoutMs: s.timeoutMs, idleTimeoutMs: s.idleTimeoutMs, fetch: fetchImpl };
  const sources: WeightSource[] = [];
  if (s.clusterCache) sources.push(createClusterCacheSource({ location: s.clusterCache, ...http }));
  if (!s.hubDisabled) sources.push(createHubSource({ hubUrl: s.hubUrl, token: s.token, ...http }));
  return sources;
}

/** A WeightStore configured from the environment. */
export function weightStoreFromEnv(
  env: EnvGetter = (name) => Deno.env.get(name),
  onFetch?: (event: WeightFetchEvent) => void,
): WeightStore {
  const settings = readWeightSettings(env);
  return createWeightStore({
    cacheDir: settings.cacheDir,
    sources: weightSourcesFrom(settings),
    maxParallel: settings.maxParallel,
    onFetch,
  });
}

function positiveInt(env: EnvGetter, name: string, fallback: number): number {
  const raw = env(name);
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new ServiceError("INTERNAL_ERROR", `${name} must be a positive integer, got ${raw}`);
  }
  return n;
}
