/**
 * Which files a repository holds, without downloading them: what configuring a model from its own
 * files starts from (which ONNX graphs, which configuration files). Asked in the weight store's
 * order: a listing remembered in the local cache, then the sources that can list (a cluster
 * cache directory, the hub's tree API). A listing is remembered once a caller found it usable
 * (`remember`), so a worker restarted offline configures the model as before, like the local
 * cache serves the files themselves; a listing that led nowhere (no ONNX graph yet) is asked
 * again next time.
 */
import { dirname, join } from "node:path";
import { isPartialName, writeStreamAtomic } from "./atomic_file.ts";
import { mostRelevant, WeightsError } from "./errors.ts";
import { localCachePath } from "./local_cache.ts";
import { assertSafeRepo, assertSafeRevision } from "./paths.ts";
import type { WeightSource } from "./types.ts";
import type { ServiceError } from "@svc/shared/errors";

/** Most files a listing holds (a model repository has tens). */
export const MAX_LISTED_FILES = 10_000;

/** Deepest folder level walked in a directory (`onnx/`, `1_Pooling/`, `2_Dense/` are level 1). */
const MAX_DEPTH = 4;

/** Folder of the local cache holding remembered listings (never a repository's org). */
export const LISTINGS_DIR = ".listings";

/** The source name of a listing remembered in the local cache. */
export const REMEMBERED_LISTING = "local-cache";

/**
 * Every file under `root` (relative, `/`-separated, sorted), skipping dot-folders, partial
 * downloads and symlinked folders; undefined when `root` is not a directory. Bounded in depth
 * and count.
 */
export async function listDirectoryFiles(root: string): Promise<string[] | undefined> {
  const info = await Deno.stat(root).catch((err) => {
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory) {
      return null;
    }
    throw err;
  });
  if (!info?.isDirectory) return undefined;
  const out: string[] = [];
  const walk = async (dir: string, rel: string, depth: number): Promise<void> => {
    for await (const e of Deno.readDir(dir)) {
      if (e.name.startsWith(".") || isPartialName(e.name)) continue;
      const path = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory) {
        if (depth < MAX_DEPTH) await walk(join(dir, e.name), path, depth + 1);
        continue;
      }
      // Files may be symlinks (a hub cache's snapshot folders are): count what they point at.
      const isFile = e.isFile ||
        (e.isSymlink && (await Deno.stat(join(dir, e.name)).catch(() => null))?.isFile);
      if (!isFile) continue;
      if (out.length >= MAX_LISTED_FILES) {
        throw new Error(`${root} holds more than ${MAX_LISTED_FILES} files`);
      }
      out.push(path);
    }
  };
  await walk(root, "", 0);
  return out.sort();
}

/** A repository's files, where the list came from, and how to keep it for the next start. */
export interface RepoListing {
  files: string[];
  /** `local-cache` (remembered), or the name of the source that listed it. */
  source: string;
  /** Remember this listing in the local cache (no-op when it came from there). */
  remember(): Promise<void>;
}

/** Lists repositories at revisions. */
export interface RepoLister {
  /**
   * The files of `repo` at `revision`. Throws a WeightsError: `not_found` when no source holds
   * the repository, or the most relevant source failure (access denied, unreachable).
   */
  list(repo: string, revision: string, opts?: { signal?: AbortSignal }): Promise<RepoListing>;
}

/** A lister over the local cache's remembered listings and `sources` (tried in order). */
export function createRepoLister(opts: { cacheDir: string; sources: WeightSource[] }): RepoLister {
  const manifestPath = (repo: string, revision: string) =>
    localCachePath(join(opts.cacheDir, LISTINGS_DIR), repo, revision, "files.json");
  return {
    async list(repo, revision, o = {}) {
      assertSafeRepo(repo);
      assertSafeRevision(revision);
      const manifest = manifestPath(repo, revision);
      const remembered = await readManifest(manifest);
      if (remembered) return { files: remembered, source: REMEMBERED_LISTING, remember: noop };
      const tried = [REMEMBERED_LISTING];
      const errors: ServiceError[] = [];
      for (const source of opts.sources) {
        if (!source.list) continue;
        tried.push(source.name);
        let files: string[] | undefined;
        try {
          files = await source.list(repo, revision, o.signal);
        } catch (err) {
          if (o.signal?.aborted) throw o.signal.reason;
          errors.push(err as ServiceError);
          continue;
        }
        if (files === undefined) continue;
        return {
          files,
          source: source.name,
          remember: () => writeManifest(manifest, files!),
        };
      }
      // An operator-fixable cause (access denied) beats a transient one, as for file fetches.
      if (errors.length > 0) throw mostRelevant(errors);
      throw new WeightsError(
        "not_found",
        "MODEL_NOT_FOUND",
        `Repository ${repo} at revision ${revision} was not found in: ${tried.join(", ")}.`,
      );
    },
  };
}

async function noop(): Promise<void> {}

async function readManifest(path: string): Promise<string[] | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch {
    return undefined;
  }
  try {
    const files = (JSON.parse(text) as { files?: unknown }).files;
    if (Array.isArray(files) && files.every((f) => typeof f === "string")) return files;
  } catch {
    // A damaged manifest is asked again of the sources (and rewritten once usable).
  }
  return undefined;
}

/** Written atomically (a reader never sees half a listing). */
async function writeManifest(path: string, files: readonly string[]): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true });
  const bytes = new TextEncoder().encode(JSON.stringify({ files }) + "\n");
  await writeStreamAtomic(path, ReadableStream.from([bytes]));
}
