/**
 * Local model directories (`SVC_MODELS` entries `ID=DIRECTORY`) as a weight source: the files of
 * repository ID are the directory's, read where they are (never copied into the cache), and
 * nothing else is ever asked for them: a file the directory lacks is "not found", not a reason to
 * try the cluster cache or the hub. Repositories it does not know are left to the other sources.
 */
import { join } from "node:path";
import { containedFile } from "./contained.ts";
import { fileStamp, isCachedFile } from "./local_cache.ts";
import { assertSafeRepoPath } from "./paths.ts";
import { sourceFailedError, WeightsError } from "./errors.ts";
import type { WeightFileRef, WeightSource } from "./types.ts";

/** The name directory sources report in logs and errors. */
export const DIRECTORY_SOURCE = "directory";

/**
 * A source serving repository id → directory (absolute paths). A file is served from where it
 * really is, and only when that is inside its directory unless `followLinks` (contained.ts).
 */
export function createDirectorySource(
  dirs: ReadonlyMap<string, string>,
  followLinks = false,
): WeightSource {
  const pathOf = (ref: WeightFileRef): string | undefined => {
    const dir = dirs.get(ref.repo);
    if (dir === undefined) return undefined;
    assertSafeRepoPath(ref.path);
    return join(dir, ...ref.path.split("/"));
  };
  return {
    name: DIRECTORY_SOURCE,
    async stamp(ref) {
      const p = pathOf(ref);
      return p === undefined ? "" : await fileStamp(p);
    },
    async localPath(ref) {
      const p = pathOf(ref);
      if (p === undefined) return undefined;
      let found: boolean;
      try {
        found = await isCachedFile(p);
      } catch (err) {
        throw sourceFailedError(DIRECTORY_SOURCE, ref, err);
      }
      if (found) return await containedFile(dirs.get(ref.repo)!, ref.path, followLinks);
      throw new WeightsError(
        "not_found",
        "MODEL_NOT_FOUND",
        `Weights file '${ref.path}' of model ${ref.modelId ?? ref.repo} is not in its directory ` +
          `${dirs.get(ref.repo)}.`,
      );
    },
    fetchTo: () => Promise.resolve(false),
  };
}
