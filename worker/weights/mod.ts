/** Weight fetching: local cache, cluster cache, model hub, and the store tying them together. */
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
