/**
 * The offline model set of `deno task start`: the fixture models (tiny, generated on first start
 * into a cache directory and reused afterwards) and GloVe when it was built into the same
 * directory. Laid out as a models directory plus a cluster cache, which is how the worker reads
 * extra models (`SVC_MODELS_DIR=<dir>/models`, `SVC_CLUSTER_CACHE=<dir>/cache`).
 */
import { join } from "node:path";
import { ensureFixtures, FIXTURE_NAMES, LARGE_FIXTURES } from "@svc/fixture-models";
import { gloveEntryPath } from "./models/glove_build.ts";
import { GLOVE_ID } from "./models/glove_catalog.ts";

/** What the offline directory holds once prepared. */
export interface OfflineModels {
  modelsDir: string;
  clusterCache: string;
  /** Model ids served from it. */
  ids: string[];
  /** True when the fixtures were generated now (first start). */
  generated: boolean;
  /** True when GloVe is built there (in the background on first start, or by models:glove). */
  glove: boolean;
}

const MARKER = ".fixtures-complete";

/** Ids of the fixture models the start serves (bench-small is left out: 133 MB). */
export const OFFLINE_FIXTURES: readonly string[] = FIXTURE_NAMES
  .filter((n) => !LARGE_FIXTURES.includes(n))
  .map((n) => `fixture/${n}`);

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/**
 * Make sure `dir` holds the fixture models (written atomically on first use; `onGenerate` is
 * called before that, for a progress line) and report what it serves.
 */
export async function prepareOfflineModels(
  dir: string,
  onGenerate?: () => void,
): Promise<OfflineModels> {
  const generated = !(await exists(join(dir, MARKER)));
  if (generated) onGenerate?.();
  await ensureFixtures(dir);
  const glove = await exists(gloveEntryPath(dir));
  return {
    modelsDir: join(dir, "models"),
    clusterCache: join(dir, "cache"),
    ids: glove ? [...OFFLINE_FIXTURES, GLOVE_ID] : [...OFFLINE_FIXTURES],
    generated,
    glove,
  };
}
