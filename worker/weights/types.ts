/** Interfaces of weight fetching: where a model's files come from. */

/** One file of one repository at one revision. */
export interface WeightFileRef {
  repo: string;
  revision: string;
  path: string;
  /** Catalog model id for error messages (defaults to `repo`). */
  modelId?: string;
  /** The catalog marks the repository as gated (licence to accept): sharpens error messages. */
  gated?: boolean;
  /** Largest size the caller accepts; a source that states a larger one is not downloaded. */
  maxBytes?: number;
}

/** One file made available by the store; emitted once per file and call site, for logs. */
export interface WeightFetchEvent {
  modelId: string;
  repo: string;
  revision: string;
  path: string;
  /** Where the file came from: `local-cache` (already there) or the source's `name`. */
  source: string;
  /** Bytes transferred into the local cache (0 for a local-cache hit). */
  bytes: number;
  durationMs: number;
}

/**
 * What {@link WeightSource.fetchTo} did: `false`, this source does not have the file; `true`, it is
 * in place and its size (or hash) matched what the source stated; `"unchecked"`, it is in place
 * but the source stated neither size nor hash, so a copy cut short would look complete.
 */
export type FetchResult = boolean | "unchecked";

/** A place weights can come from: local cache, cluster cache, model hub. */
export interface WeightSource {
  /** Short name for logs and errors: `local-cache`, `cluster-cache`, `hub`. */
  readonly name: string;
  /**
   * Copy the file to `dest` atomically (temp file then rename). Returns false when this source
   * does not have the file, `"unchecked"` when it could not prove the copy complete; throws a
   * ServiceError-compatible error on access problems.
   */
  fetchTo(ref: WeightFileRef, dest: string, signal?: AbortSignal): Promise<FetchResult>;
  /**
   * What this source holds of the file now, cheaply and without downloading (size and
   * modification time, or absent). Only sources that can tell without a network call have it.
   */
  stamp?(ref: WeightFileRef): Promise<string>;
  /**
   * The file's path when this source is a local directory that can be read in place (a cluster
   * cache directory): the store then serves it from there, never copying it into the local
   * cache, so a model rebuilt there is never answered from a stale copy. Undefined when absent.
   */
  localPath?(ref: WeightFileRef): Promise<string | undefined>;
  /**
   * Every file path of a repository at a revision (relative, `/`-separated), or undefined when
   * this source does not hold the repository. Only sources that can list have it (a directory,
   * the hub's tree API); errors are the same kinds `fetchTo` throws.
   */
  list?(repo: string, revision: string, signal?: AbortSignal): Promise<string[] | undefined>;
}

/** Resolves all files of a model to local paths, fetching what is missing. */
export interface WeightStore {
  /** Local absolute paths by role; concurrent calls for the same file share one download. */
  ensureFiles(
    repo: string,
    revision: string,
    files: Record<string, string>,
    opts?: {
      gated?: boolean;
      modelId?: string;
      signal?: AbortSignal;
      /** Largest accepted size per role (bytes): larger files fail with WeightFileTooLargeError. */
      maxBytes?: Record<string, number>;
    },
  ): Promise<Record<string, string>>;
  /**
   * A fingerprint of what the caches (local, and a cluster cache directory) hold of these files:
   * it changes when one of them appears, is replaced or disappears. Never downloads.
   */
  cacheStamp(repo: string, revision: string, files: Record<string, string>): Promise<string>;
  /**
   * True when every one of these files is on this machine: in the local cache, or in a source
   * read in place (a cluster cache directory). Stats only: never downloads, never asks a server.
   */
  hasLocally?(repo: string, revision: string, files: Record<string, string>): Promise<boolean>;
  /**
   * Move the local cache's copies of these files aside (a model that does not load from them may
   * have been cut short or corrupted), so the next `ensureFiles` fetches them again. Returns the
   * repository paths that were moved (none when the files are not in the local cache).
   */
  quarantine?(repo: string, revision: string, files: Record<string, string>): Promise<string[]>;
  /**
   * Delete the local cache's copies of these files (files a caller refused, such as a LoRA
   * adapter that does not fit its model): client-chosen ids must not fill the disk.
   */
  discard?(repo: string, revision: string, files: Record<string, string>): Promise<void>;
  /**
   * The repository paths among `files` whose local copy this process fetched from a source that
   * could not prove it complete (fetchTo answered `"unchecked"`): a load failing on them may be a
   * copy cut short, not a file that can never load.
   */
  unchecked?(repo: string, revision: string, files: Record<string, string>): string[];
  /**
   * Bytes the local cache holds of these files (0 for files read in place from a cluster cache
   * directory, or absent): what keeping them costs `SVC_CACHE_DIR`.
   */
  cachedBytes?(repo: string, revision: string, files: Record<string, string>): Promise<number>;
  /**
   * Repositories whose local cache holds `path` at `revision`, with its size and modification
   * time: what an earlier process left there (LoRA adapters, for their disk budget).
   */
  listCached?(
    revision: string,
    path: string,
  ): Promise<{ repo: string; bytes: number; mtimeMs: number }[]>;
}
