/**
 * The local weight cache (SVC_CACHE_DIR): `<cacheDir>/<org>/<name>/@<revision>/<path>`. Each
 * revision has its own folder, so a file cached for one revision is never served for another
 * (the cluster cache, which its operator fills, holds one version: `<base>/<org>/<name>/<path>`).
 * Only complete files ever appear at these paths (see atomic_file.ts); `*.partial-*` siblings
 * are in-progress or abandoned downloads and are never returned.
 */
import { dirname } from "node:path";
import { ServiceError } from "@svc/shared/errors";
import { assertSafeRevision, repoFilePath } from "./paths.ts";

/** The name reported for files that were already in the local cache. */
export const LOCAL_CACHE_SOURCE = "local-cache";

/** Marks the revision folder inside a repository's folder of the local cache. */
export const REVISION_PREFIX = "@";

/** Absolute local path of a repository file at a revision (validated; cannot escape `cacheDir`). */
export function localCachePath(
  cacheDir: string,
  repo: string,
  revision: string,
  path: string,
): string {
  assertSafeRevision(revision);
  return repoFilePath(cacheDir, repo, `${REVISION_PREFIX}${revision}/${path}`);
}

/** True when `path` is a complete cached file (a regular file, not a directory). */
export async function isCachedFile(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory) {
      return false;
    }
    throw err;
  }
}

/**
 * What is at `path` now, as a short text: `<size>@<mtime ms>` for a file, `absent` otherwise.
 * Files are only ever renamed into place, so a new file always gets a new modification time.
 */
export async function fileStamp(path: string): Promise<string> {
  try {
    const info = await Deno.stat(path);
    return info.isFile ? `${info.size}@${info.mtime?.getTime() ?? 0}` : "absent";
  } catch (err) {
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory) {
      return "absent";
    }
    throw err;
  }
}

/** Creates the directory that will hold `dest` and checks it really is a directory. */
export async function prepareDestDir(dest: string): Promise<string> {
  const dir = dirname(dest);
  await Deno.mkdir(dir, { recursive: true });
  // mkdir succeeds through symlinks and races; the rename later needs a real directory.
  const info = await Deno.stat(dir);
  if (!info.isDirectory) {
    throw new ServiceError("INTERNAL_ERROR", `weights cache path is not a directory: ${dir}`);
  }
  return dir;
}
