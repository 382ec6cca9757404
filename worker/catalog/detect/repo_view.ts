/**
 * A repository as detection reads it: the list of its files, its small JSON files, and a local
 * path for a file it must look into (the ONNX graph's declared inputs and outputs). Two kinds: a
 * directory read in place, and a hub repository read through the weight store (local cache →
 * cluster cache → hub) and listed by the repository lister.
 */
import { join } from "node:path";
import { listDirectoryFiles } from "../../weights/listing.ts";
import type { RepoLister } from "../../weights/listing.ts";
import type { WeightStore } from "../../weights/types.ts";
import { WeightFileTooLargeError, WeightsError } from "../../weights/errors.ts";
import { DetectionError } from "./errors.ts";

/** Largest JSON file detection reads (configuration files are a few KB; vocabularies are not read). */
export const MAX_JSON_BYTES = 4 * 1024 * 1024;

/** A repository being detected. */
export interface RepoView {
  /** Every file of the repository (relative paths). */
  readonly files: ReadonlySet<string>;
  /**
   * A JSON file of the repository, parsed; undefined when the repository has no such file.
   * Throws a DetectionError when it is not JSON or too large.
   */
  json(path: string): Promise<unknown>;
  /** A local path to a repository file (fetched into the cache when needed). */
  local(path: string): Promise<string>;
}

function parseJson(path: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new DetectionError(
      path,
      undefined,
      `is not valid JSON (${(err as Error).message})`,
      "Fix or remove the file",
    );
  }
}

function tooLarge(path: string, size: number): DetectionError {
  return new DetectionError(
    path,
    undefined,
    `is ${size} bytes, more than the ${MAX_JSON_BYTES} a configuration file may have`,
    "Fix or remove the file",
  );
}

/** The repository laid out in `dir` (never written to); a missing directory is `not_found`. */
export async function directoryView(dir: string, modelId: string): Promise<RepoView> {
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
  const pathOf = (p: string) => join(dir, ...p.split("/"));
  return {
    files,
    async json(path) {
      if (!files.has(path)) return undefined;
      const size = (await Deno.stat(pathOf(path))).size;
      if (size > MAX_JSON_BYTES) throw tooLarge(path, size);
      return parseJson(path, await Deno.readTextFile(pathOf(path)));
    },
    local: (path) => Promise.resolve(pathOf(path)),
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
      let local: string;
      try {
        local = await fetchOne(path, MAX_JSON_BYTES);
      } catch (err) {
        if (err instanceof WeightFileTooLargeError) throw tooLarge(path, err.size);
        throw err;
      }
      return parseJson(path, await Deno.readTextFile(local));
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
