/**
 * `@svc/worker/weights`: weight fetching (local cache, cluster cache, model hub, the store tying
 * them together) and the cache's atomic writer, for tools that put models into a cache.
 */
export type { WeightFetchEvent, WeightFileRef, WeightSource, WeightStore } from "./types.ts";
export { createWeightStore, type WeightStoreOptions } from "./store.ts";
export {
  createClusterCacheSource,
  createDirClusterCache,
  createHttpClusterCache,
} from "./cluster_cache.ts";
export { createHubSource, type HubSourceOptions } from "./hub.ts";
export {
  describeWeightSettings,
  type WeightSettings,
  weightSourcesFrom,
  weightStoreFrom,
} from "./settings.ts";
export { fetchWithTimeout } from "./http.ts";
export { localCachePath } from "./local_cache.ts";
export { writeStreamAtomic } from "./atomic_file.ts";
