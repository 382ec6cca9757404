/**
 * The cluster cache (SVC_CLUSTER_CACHE): a shared directory or an http(s) base URL laid out as
 * `<base>/<org>/<name>/<path>`. A missing file (ENOENT / HTTP 404) means "not here" (false).
 */
import { DEFAULT_IDLE_TIMEOUT_MS, writeStreamAtomic } from "./atomic_file.ts";
import { checkFileSize, sourceFailedError, tooLargeError } from "./errors.ts";
import { DEFAULT_HTTP_TIMEOUT_MS, fetchWithTimeout } from "./http.ts";
import { fileStamp, isCachedFile } from "./local_cache.ts";
import { assertSafeRepo, repoFilePath, repoFileUrl } from "./paths.ts";
import { listDirectoryFiles } from "./listing.ts";
import { join } from "node:path";
import type { FetchResult, WeightFileRef, WeightSource } from "./types.ts";

/** The name cluster cache sources report in logs and errors. */
export const CLUSTER_CACHE_SOURCE = "cluster-cache";

/** Options of the cluster cache sources. */
export interface ClusterCacheOptions {
  /** Directory path, or an http(s) base URL. */
  location: string;
  /** Bound for each HTTP call to answer (headers). */
  timeoutMs?: number;
  /** Bound on silence while streaming a body. */
  idleTimeoutMs?: number;
  /** Injected fetch for tests. */
  fetch?: typeof fetch;
}

/** Whether a cluster cache location is an http(s) base URL (else a directory). */
export function isHttpLocation(location: string): boolean {
  return /^https?:\/\//i.test(location);
}

/**
 * An http(s) cluster cache as it may be shown (pages, status): scheme and host only, since the
 * URL's user info, path or query may carry credentials.
 */
export function shownLocation(location: string): string {
  try {
    const u = new URL(location);
    return `${u.protocol}//${u.host}`;
  } catch {
    return "an http cluster cache";
  }
}

/** A cluster cache source for a directory or an http(s) URL, chosen from `location`. */
export function createClusterCacheSource(opts: ClusterCacheOptions): WeightSource {
  return isHttpLocation(opts.location) ? createHttpClusterCache(opts) : createDirClusterCache(opts);
}

/**
 * A cluster cache on a (shared, possibly network-mounted) directory. Its files are read where they
 * are (`localPath`, asked first by the store), never copied, so it has nothing to fetch: when
 * `localPath` found no file, there is none.
 */
export function createDirClusterCache(opts: ClusterCacheOptions): WeightSource {
  return {
    name: CLUSTER_CACHE_SOURCE,
    stamp: (ref) => fileStamp(repoFilePath(opts.location, ref.repo, ref.path)),
    async localPath(ref: WeightFileRef): Promise<string | undefined> {
      const src = repoFilePath(opts.location, ref.repo, ref.path);
      try {
        return (await isCachedFile(src)) ? src : undefined;
      } catch (err) {
        throw sourceFailedError(CLUSTER_CACHE_SOURCE, ref, err);
      }
    },
    fetchTo: () => Promise.resolve(false),
    async list(repo: string, revision: string): Promise<string[] | undefined> {
      assertSafeRepo(repo);
      try {
        return await listDirectoryFiles(join(opts.location, ...repo.split("/")));
      } catch (err) {
        throw sourceFailedError(CLUSTER_CACHE_SOURCE, { repo, revision, path: "(file list)" }, err);
      }
    },
  };
}

/**
 * A cluster cache served over http(s) as static files. A file sent without a `Content-Length`
 * (chunked, or compressed) cannot be checked for completeness: it is fetched, but reported
 * `unchecked`, so that a load failing on it is not taken for a file that can never load.
 */
export function createHttpClusterCache(opts: ClusterCacheOptions): WeightSource {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
  const idleTimeoutMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  return {
    name: CLUSTER_CACHE_SOURCE,
    async fetchTo(ref: WeightFileRef, dest: string, signal?: AbortSignal): Promise<FetchResult> {
      const url = repoFileUrl(opts.location, ref.repo, ref.path);
      try {
        const res = await fetchWithTimeout(url, {}, {
          timeoutMs,
          signal,
          fetch: opts.fetch,
          // Error bodies are small; reading them releases the connection.
          buffer: (r) => !r.ok,
        });
        if (res.status === 404) return false;
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        const declared = declaredLength(res);
        if (declared !== undefined && ref.maxBytes !== undefined && declared > ref.maxBytes) {
          await res.body.cancel();
          checkFileSize(ref, declared);
        }
        await writeStreamAtomic(dest, res.body, {
          signal,
          idleTimeoutMs,
          expectedBytes: declared,
          maxBytes: ref.maxBytes,
        });
        return declared === undefined ? "unchecked" : true;
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        const tooLarge = tooLargeError(ref, err);
        if (tooLarge) throw tooLarge;
        // The URL is not quoted: a base URL may carry credentials.
        throw sourceFailedError(CLUSTER_CACHE_SOURCE, ref, err);
      }
    },
  };
}

/** Content-Length when it counts the bytes we will read (fetch decodes compressed bodies). */
function declaredLength(res: Response): number | undefined {
  const length = res.headers.get("content-length");
  const encoding = res.headers.get("content-encoding");
  if (length === null || (encoding !== null && encoding !== "identity")) return undefined;
  const n = Number(length);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}
