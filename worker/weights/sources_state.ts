/**
 * What would fetch a model's weights that are not on this machine, said in one line for the
 * pages: nothing (`SVC_HUB_DISABLED=1` and no http cluster cache), a source that was unreachable
 * the last time a load tried it, or the source that downloads them on first use.
 */
import type { WeightSettings } from "./settings.ts";
import { isHttpLocation, shownLocation } from "./cluster_cache.ts";

/** The weight sources' reachability as loads have found it. */
export class WeightSourcesState {
  #unreachableAt: number | undefined;

  constructor(
    private readonly s: Pick<WeightSettings, "hubDisabled" | "hubUrl" | "clusterCache">,
    private readonly now: () => number = Date.now,
  ) {}

  /** A load could not reach a weight source (error class `hub_unreachable` or `timeout`). */
  unreachable(): void {
    this.#unreachableAt = this.now();
  }

  /** A file came from a remote source: it is reachable again. */
  reachable(): void {
    this.#unreachableAt = undefined;
  }

  /**
   * An http(s) cluster cache, when one is set, as it may be shown (scheme and host: the reason
   * reaches /ws/status and the pages); a directory is read in place ("on disk").
   */
  get #remoteCache(): string | undefined {
    const c = this.s.clusterCache;
    return c && isHttpLocation(c) ? shownLocation(c) : undefined;
  }

  /** Why the weights of a model that is not on this machine are, or are not, within reach. */
  reason(): string {
    const cache = this.#remoteCache;
    if (this.s.hubDisabled && !cache) {
      return "its weights are not on this machine and nothing can fetch them: SVC_HUB_DISABLED=1 " +
        "and no http cluster cache (put them in SVC_CACHE_DIR or a SVC_CLUSTER_CACHE directory)";
    }
    const from = cache && this.s.hubDisabled
      ? `the cluster cache (${cache})`
      : cache
      ? `the cluster cache (${cache}) or the hub (${this.s.hubUrl})`
      : `the hub (${this.s.hubUrl})`;
    if (this.#unreachableAt !== undefined) {
      const at = new Date(this.#unreachableAt).toISOString().slice(11, 19);
      return `its weights are not on this machine, and ${from} was unreachable at ${at} UTC: ` +
        "its first request fails until it can be reached";
    }
    return `its weights are not on this machine: ${from} on its first request (a download)`;
  }
}
