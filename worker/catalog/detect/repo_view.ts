/**
 * A repository as detection reads it: the list of its files, its small JSON files, and a local
 * path for a file it must look into (the ONNX graph's declared inputs and outputs). Two kinds: a
 * directory read in place, and a hub repository read through the weight store (local cache →
 * cluster cache → hub) and listed by the repository lister.
 */
import { listDirectoryFiles } from "../../weights/listing.ts";
import type { RepoLister } from "../../weights/listing.ts";
import type { WeightStore } from "../../weights/types.ts";
import { WeightFileTooLargeError, WeightsError } from "../../weights/errors.ts";
import { containedFile } from "../../weights/contained.ts";
import {
  DEFAULT_MODEL_JSON_BOUNDS,
  type ModelJsonBounds,
  type ModelJsonKind,
  oversize,
  readModelJson,
} from "../../weights/model_json.ts";

/** A repository being detected. */
export interface RepoView {
  /** Every file of the repository (relative paths). */
  readonly files: ReadonlySet<string>;
  /**
   * A JSON file of the repository, parsed; undefined when the repository has no such file.
   * Throws a ModelFileError (naming the file, quoting nothing of it) when it is not JSON or is
   * over its bounds.
   */
  json(path: string): Promise<unknown>;
  /** A local path to a repository file (fetched into the cache when needed). */
  local(path: string): Promise<string>;
}

/** How a view reads a repository's files. */
export interface ViewOptions {
  /** Bounds of its JSON files (defaults: {@link DEFAULT_MODEL_JSON_BOUNDS}). */
  json?: ModelJsonBounds;
  /** A directory's files may be links to files outside it (`SVC_MODELS_FOLLOW_LINKS`). */
  followLinks?: boolean;
}

/** Which bound a repository JSON file gets: tokenizers' generous one, or configuration's. */
export function jsonKindOf(path: string): ModelJsonKind {
  return path === "tokenizer.json" || path.endsWith("/tokenizer.json") ? "tokenizer" : "config";
}

/**
 * The repository laid out in `dir` (never written to); a missing directory is `not_found`. Every
 * file is read from where it really is, and refused when that is outside `dir` (contained.ts).
 */
export async function directoryView(
  dir: string,
  modelId: string,
  opts: ViewOptions = {},
): Promise<RepoView> {
  const listed = await listDirectoryFiles(dir).catch((err) => {
    throw new WeightsError(
      "not_found",
      "MODEL_NOT_FOUND",
      `The directory ${dir} of model ${modelId} cannot be read: ${(err as Error).message}`,
    );
  });
  if (listed === undefined) {
    throw new WeightsError(
      "not_found",
      "MODEL_NOT_FOUND",
      `The directory ${dir} of model ${modelId} does not exist (SVC_MODELS).`,
    );
  }
  const files = new Set(listed);
  const bounds = opts.json ?? DEFAULT_MODEL_JSON_BOUNDS;
  const pathOf = (p: string) => containedFile(dir, p, opts.followLinks ?? false);
  return {
    files,
    async json(path) {
      if (!files.has(path)) return undefined;
      return await readModelJson(await pathOf(path), bounds, jsonKindOf(path), path);
    },
    local: pathOf,
  };
}

/** Options of {@link hubView}. */
export interface HubViewOptions {
  modelId: string;
  repo: string;
  revision: string;
  store: WeightStore;
  lister: RepoLister;
  signal?: AbortSignal;
  /** Bounds of its JSON files (defaults: {@link DEFAULT_MODEL_JSON_BOUNDS}). */
  json?: ModelJsonBounds;
}

/** A hub repository through the weight store, plus a callback keeping its listing for restarts. */
export async function hubView(
  o: HubViewOptions,
): Promise<RepoView & { remember(): Promise<void> }> {
  const listing = await o.lister.list(o.repo, o.revision, { signal: o.signal });
  const files = new Set(listing.files);
  const fetchOne = async (path: string, maxBytes?: number): Promise<string> => {
    const got = await o.store.ensureFiles(o.repo, o.revision, { file: path }, {
      modelId: o.modelId,
      signal: o.signal,
      ...(maxBytes === undefined ? {} : { maxBytes: { file: maxBytes } }),
    });
    return got.file;
  };
  return {
    files,
    remember: listing.remember,
    async json(path) {
      if (!files.has(path)) return undefined;
      const bounds = o.json ?? DEFAULT_MODEL_JSON_BOUNDS;
      const kind = jsonKindOf(path);
      let local: string;
      try {
        const max = kind === "tokenizer" ? bounds.maxTokenizerBytes : bounds.maxBytes;
        local = await fetchOne(path, max);
      } catch (err) {
        if (err instanceof WeightFileTooLargeError) throw oversize(path, err.size, bounds, kind)!;
        throw err;
      }
      return await readModelJson(local, bounds, kind, path);
    },
    local: (path) => fetchOne(path),
  };
}

/** A JSON object as a repository's config files hold them. */
export type Json = Record<string, unknown>;

/** Whether a parsed JSON value is an object (not null, not an array). */
export function isJsonObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
