/**
 * The weight store: resolves a model's files to local paths in the cache, fetching what is
 * missing from the sources in order (cluster cache, hub...). One download per file at a time
 * in this process, whatever the number of callers; several files of a model in parallel.
 */
import { dirname, join as joinPath, resolve } from "node:path";
import { ServiceError } from "@svc/shared/errors";
import { removeStalePartials } from "./atomic_file.ts";
import { checkFileSize, mostRelevant, weightsNotFoundError } from "./errors.ts";
import { mapLimit } from "./limit.ts";
import {
  fileStamp,
  isCachedFile,
  LOCAL_CACHE_SOURCE,
  localCachePath,
  prepareDestDir,
} from "./local_cache.ts";
import { assertSafeRepo, assertSafeRepoPath, assertSafeRevision } from "./paths.ts";
import type {
  FetchResult,
  WeightFetchEvent,
  WeightFileRef,
  WeightSource,
  WeightStore,
} from "./types.ts";

/** Folder of the local cache where copies that failed to load are moved (never a repo org). */
export const QUARANTINE_DIR = ".quarantine";

/** Default number of files of one model fetched at the same time. */
export const DEFAULT_MAX_PARALLEL = 4;

/** Default age (ms) after which a partial file is considered abandoned by a crashed download. */
export const DEFAULT_STALE_PARTIAL_MS = 15 * 60_000;

/** Options of {@link createWeightStore}. */
export interface WeightStoreOptions {
  /** Local cache directory (SVC_CACHE_DIR), layout `<cacheDir>/<org>/<name>/<path>`. */
  cacheDir: string;
  /** Where missing files come from, tried in order. */
  sources: WeightSource[];
  /** Files of one `ensureFiles` call fetched concurrently. */
  maxParallel?: number;
  /** Partial files untouched for this long are deleted before a new download in their folder. */
  stalePartialMs?: number;
  /** Called once per file made available (source, bytes) — hook for logs and metrics. */
  onFetch?: (event: WeightFetchEvent) => void;
}

/** A shared download: callers join it; it is cancelled only when every caller has gone. */
interface InFlight {
  promise: Promise<void>;
  controller: AbortController;
  waiters: number;
}

/** Creates a WeightStore over a local cache directory and an ordered list of sources. */
export function createWeightStore(opts: WeightStoreOptions): WeightStore {
  const cacheDir = resolve(opts.cacheDir);
  const maxParallel = opts.maxParallel ?? DEFAULT_MAX_PARALLEL;
  const stalePartialMs = opts.stalePartialMs ?? DEFAULT_STALE_PARTIAL_MS;
  const inflight = new Map<string, InFlight>();
  /** Local copies fetched this process from a source that could not prove them complete. */
  const unchecked = new Set<string>();

  const emit = (ref: WeightFileRef, source: string, bytes: number, started: number): void => {
    opts.onFetch?.({
      modelId: ref.modelId ?? ref.repo,
      repo: ref.repo,
      revision: ref.revision,
      path: ref.path,
      source,
      bytes,
      durationMs: Math.round(performance.now() - started),
    });
  };

  /** Tries each source in turn; only called by the single owner of `dest`'s download. */
  const download = async (ref: WeightFileRef, dest: string, signal: AbortSignal) => {
    const started = performance.now();
    const dir = await prepareDestDir(dest);
    await removeStalePartials(dir, stalePartialMs);
    // Another process sharing the cache directory may have completed it meanwhile.
    if (await isCachedFile(dest)) return emit(ref, LOCAL_CACHE_SOURCE, 0, started);
    const tried = [LOCAL_CACHE_SOURCE];
    const errors: ServiceError[] = [];
    for (const source of opts.sources) {
      signal.throwIfAborted();
      tried.push(source.name);
      let found: FetchResult;
      try {
        found = await source.fetchTo(ref, dest, signal);
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        // Keep going: a later source may have the file even if this one is down.
        errors.push(asServiceError(source.name, ref, err));
        continue;
      }
      if (!found) continue;
      const info = await Deno.stat(dest).catch(() => null);
      if (!info?.isFile) {
        errors.push(
          new ServiceError(
            "INTERNAL_ERROR",
            `weight source ${source.name} reported '${ref.path}' as fetched but wrote no file`,
          ),
        );
        continue;
      }
      if (found === "unchecked") unchecked.add(dest);
      else unchecked.delete(dest);
      return emit(ref, source.name, info.size, started);
    }
    if (errors.length > 0) throw mostRelevant(errors);
    throw weightsNotFoundError(ref, tried);
  };

  const join = (ref: WeightFileRef, dest: string): InFlight => {
    const existing = inflight.get(dest);
    if (existing) return existing;
    const controller = new AbortController();
    const entry: InFlight = { controller, waiters: 0, promise: Promise.resolve() };
    entry.promise = download(ref, dest, controller.signal).finally(() => {
      if (inflight.get(dest) === entry) inflight.delete(dest);
    });
    // Waiters observe the outcome; this only keeps an abandoned download from being "unhandled".
    entry.promise.catch(() => {});
    inflight.set(dest, entry);
    return entry;
  };

  const leave = (dest: string, entry: InFlight): void => {
    entry.waiters--;
    if (entry.waiters > 0) return;
    // Nobody wants it any more: stop it, and let the next caller start a fresh one.
    if (inflight.get(dest) === entry) inflight.delete(dest);
    entry.controller.abort(new DOMException("weight download cancelled", "AbortError"));
  };

  const ensureOne = async (ref: WeightFileRef, signal?: AbortSignal): Promise<string> => {
    signal?.throwIfAborted();
    const started = performance.now();
    // A source on a local directory is read where it is: no copy, and never a stale one.
    for (const source of opts.sources) {
      const inPlace = await source.localPath?.(ref);
      if (inPlace) {
        emit(ref, source.name, 0, started);
        return inPlace;
      }
    }
    const dest = localCachePath(cacheDir, ref.repo, ref.revision, ref.path);
    if (await isCachedFile(dest)) {
      emit(ref, LOCAL_CACHE_SOURCE, 0, started);
      return dest;
    }
    const entry = join(ref, dest);
    entry.waiters++;
    try {
      await untilAborted(entry.promise, signal);
    } catch (err) {
      if (signal?.aborted) leave(dest, entry);
      throw err;
    }
    return dest;
  };

  return {
    async ensureFiles(repo, revision, files, o = {}) {
      assertSafeRepo(repo);
      assertSafeRevision(revision);
      const entries = Object.entries(files);
      for (const [, path] of entries) assertSafeRepoPath(path);
      const local = new Map<string, string>();
      const unique = [...new Set(entries.map(([, path]) => path))];
      await mapLimit(unique, maxParallel, async (path) => {
        const ref: WeightFileRef = {
          repo,
          revision,
          path,
          modelId: o.modelId,
          gated: o.gated,
          maxBytes: boundOf(path, entries, o.maxBytes),
        };
        const file = await ensureOne(ref, o.signal);
        // Whichever source it came from (a cached copy, a directory read in place) is checked.
        if (ref.maxBytes !== undefined) checkFileSize(ref, (await Deno.stat(file)).size);
        local.set(path, file);
      });
      return Object.fromEntries(entries.map(([role, path]) => [role, local.get(path)!]));
    },

    async quarantine(repo, revision, files) {
      assertSafeRepo(repo);
      const moved: string[] = [];
      for (const path of new Set(Object.values(files))) {
        assertSafeRepoPath(path);
        const local = localCachePath(cacheDir, repo, revision, path);
        if (!(await isCachedFile(local))) continue;
        // One quarantined copy per file (the latest), outside the cache's own layout.
        const aside = localCachePath(joinPath(cacheDir, QUARANTINE_DIR), repo, revision, path);
        await Deno.mkdir(dirname(aside), { recursive: true });
        await Deno.rename(local, aside);
        unchecked.delete(local);
        moved.push(path);
      }
      return moved;
    },

    async discard(repo, revision, files) {
      assertSafeRepo(repo);
      const dirs = new Set<string>();
      for (const path of new Set(Object.values(files))) {
        assertSafeRepoPath(path);
        const local = localCachePath(cacheDir, repo, revision, path);
        await Deno.remove(local).catch(() => {});
        unchecked.delete(local);
        dirs.add(dirname(local));
      }
      // Folders left empty go too (the revision's, the repository's, its owner's): names that
      // clients chose must not pile up as empty folders either. Non-empty ones stay.
      for (let dir of dirs) {
        while (dir.startsWith(cacheDir + "/") && dir !== cacheDir) {
          try {
            await Deno.remove(dir);
          } catch {
            break;
          }
          dir = dirname(dir);
        }
      }
    },

    async cachedBytes(repo, revision, files) {
      assertSafeRepo(repo);
      let total = 0;
      for (const path of new Set(Object.values(files))) {
        assertSafeRepoPath(path);
        const info = await Deno.stat(localCachePath(cacheDir, repo, revision, path)).catch(() =>
          null
        );
        if (info?.isFile) total += info.size;
      }
      return total;
    },

    async listCached(revision, path) {
      assertSafeRepoPath(path);
      const out: { repo: string; bytes: number; mtimeMs: number }[] = [];
      for (const org of await dirNames(cacheDir)) {
        if (org.startsWith(".")) continue; // the quarantine, never a repository's owner
        for (const name of await dirNames(joinPath(cacheDir, org))) {
          const repo = `${org}/${name}`;
          let file: string;
          try {
            file = localCachePath(cacheDir, repo, revision, path);
          } catch {
            continue; // not a valid repository id
          }
          const info = await Deno.stat(file).catch(() => null);
          if (info?.isFile) {
            out.push({ repo, bytes: info.size, mtimeMs: info.mtime?.getTime() ?? 0 });
          }
        }
      }
      return out;
    },

    unchecked(repo, revision, files) {
      return [...new Set(Object.values(files))]
        .filter((path) => unchecked.has(localCachePath(cacheDir, repo, revision, path)));
    },

    async hasLocally(repo, revision, files) {
      for (const path of new Set(Object.values(files))) {
        const ref: WeightFileRef = { repo, revision, path };
        let here = await isCachedFile(localCachePath(cacheDir, repo, revision, path));
        for (const source of opts.sources) {
          if (here) break;
          here = (await source.localPath?.(ref)) !== undefined;
        }
        if (!here) return false;
      }
      return true;
    },

    async cacheStamp(repo, revision, files) {
      const paths = [...new Set(Object.values(files))].sort();
      const parts = await Promise.all(paths.map(async (path) => {
        const ref: WeightFileRef = { repo, revision, path };
        const stamps = [await fileStamp(localCachePath(cacheDir, repo, revision, path))];
        for (const source of opts.sources) {
          if (source.stamp) stamps.push(await source.stamp(ref));
        }
        return `${path}=${stamps.join(",")}`;
      }));
      return parts.join(";");
    },
  };
}

/** Names of the folders in `dir` (none when it does not exist). */
async function dirNames(dir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) if (e.isDirectory) names.push(e.name);
  } catch {
    // absent or unreadable: nothing cached there
  }
  return names;
}

/** The smallest bound the roles naming `path` have, if any. */
function boundOf(
  path: string,
  entries: readonly [string, string][],
  maxBytes: Record<string, number> | undefined,
): number | undefined {
  if (!maxBytes) return undefined;
  const bounds = entries.filter(([role, p]) => p === path && maxBytes[role] !== undefined)
    .map(([role]) => maxBytes[role]);
  return bounds.length > 0 ? Math.min(...bounds) : undefined;
}

/** Resolves/rejects like `promise`, or rejects as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function asServiceError(sourceName: string, ref: WeightFileRef, err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  const reason = err instanceof Error ? err.message : String(err);
  return new ServiceError(
    "INTERNAL_ERROR",
    `weight source ${sourceName} failed for '${ref.path}' of ${ref.modelId ?? ref.repo}: ${reason}`,
  );
}
