/**
 * JSON files a model brings (its directory's or its hub repository's): configuration files and
 * tokenizers. Each has a size bound (a generous one for tokenizers) and a nesting bound, checked
 * before JSON.parse allocates anything, and every error names the file and where in it the fault
 * is, never what the file holds: a model directory may link to files that are not the model's,
 * and what a load error says reaches clients (`/v1/models`, `502 MODEL_LOAD_FAILED`) and logs.
 */
import { basename } from "node:path";
import { scanJson } from "@svc/shared/codec/json_scan";
import { IncompatibleModelError } from "../registry/runner.ts";

/**
 * Bounds of the JSON files a model brings (`SVC_MAX_MODEL_JSON_BYTES`,
 * `SVC_MAX_TOKENIZER_JSON_BYTES`, `SVC_MAX_MODEL_JSON_DEPTH`).
 */
export interface ModelJsonBounds {
  /** Largest configuration file (`config.json`, `gliner_config.json`, …). */
  maxBytes: number;
  /** Largest `tokenizer.json` (vocabularies and merges). */
  maxTokenizerBytes: number;
  /** Deepest nesting of arrays and objects in any of them. */
  maxDepth: number;
}

/**
 * Defaults. Configuration files are a few KB; 4 MiB is far above any. The largest tokenizers of
 * public models are some 35 MB (262k-entry vocabularies with merges); 64 MiB leaves room. Real
 * files nest fewer than 10 levels; 64 stops a file of nested brackets long before the parser's
 * or the tokenizer's recursion can matter.
 */
export const DEFAULT_MODEL_JSON_BOUNDS: ModelJsonBounds = Object.freeze({
  maxBytes: 4 * 1024 * 1024,
  maxTokenizerBytes: 64 * 1024 * 1024,
  maxDepth: 64,
});

/** Which bound a file gets. */
export type ModelJsonKind = "config" | "tokenizer";

/** A model file that cannot be used as it is: names the file and the place, quotes nothing. */
export class ModelFileError extends IncompatibleModelError {
  constructor(readonly file: string, problem: string) {
    super(`${file}: ${problem}`);
    this.name = "ModelFileError";
  }
}

/** The byte bound of `kind` and the setting that sets it. */
function sizeBound(bounds: ModelJsonBounds, kind: ModelJsonKind): [number, string] {
  return kind === "tokenizer"
    ? [bounds.maxTokenizerBytes, "SVC_MAX_TOKENIZER_JSON_BYTES"]
    : [bounds.maxBytes, "SVC_MAX_MODEL_JSON_BYTES"];
}

/** The error of a file of `size` bytes over the bound of its kind, or undefined. */
export function oversize(
  file: string,
  size: number,
  bounds: ModelJsonBounds,
  kind: ModelJsonKind,
): ModelFileError | undefined {
  const [max, setting] = sizeBound(bounds, kind);
  return size > max
    ? new ModelFileError(file, `is ${size} bytes, more than the ${max} allowed (${setting})`)
    : undefined;
}

/**
 * Read and parse the JSON file at `path` (named `file` in errors: a repository path such as
 * `onnx/tokenizer.json`, never the machine's path), within `bounds`.
 */
export async function readModelJson(
  path: string,
  bounds: ModelJsonBounds,
  kind: ModelJsonKind,
  file: string = basename(path),
): Promise<unknown> {
  const size = (await Deno.stat(path)).size;
  const over = oversize(file, size, bounds, kind);
  if (over) throw over;
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    // The OS's reason (not found, permission) names no content.
    throw new ModelFileError(file, `cannot be read (${(err as Error).name})`);
  }
  // The file may have grown since the stat.
  const grown = oversize(file, text.length, bounds, kind);
  if (grown) throw grown;
  return parseModelJson(file, text, bounds.maxDepth);
}

/** Parse `text` of the file `file`, refusing nesting deeper than `maxDepth` before parsing. */
export function parseModelJson(file: string, text: string, maxDepth: number): unknown {
  try {
    scanJson(text, {
      maxDepth,
      maxValues: Number.MAX_SAFE_INTEGER,
      maxObjectKeys: Number.MAX_SAFE_INTEGER,
    });
  } catch {
    throw new ModelFileError(
      file,
      `nests arrays and objects deeper than ${maxDepth} levels (SVC_MAX_MODEL_JSON_DEPTH)`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ModelFileError(file, `is not valid JSON (${jsonFault((err as Error).message)})`);
  }
}

/**
 * What the parser found wrong and where, without the snippet of the text V8 puts in some of its
 * messages (`Unexpected token 'r', "root:x:0:0"... is not valid JSON`).
 */
export function jsonFault(message: string): string {
  const at = message.match(/^(.*?) in JSON at position (\d+) \(line (\d+) column (\d+)\)$/);
  if (at && !/["']/.test(at[1])) return `${at[1].toLowerCase()} at line ${at[3]} column ${at[4]}`;
  if (/^Unexpected end of JSON input$/.test(message)) return "it ends too early";
  return "an unexpected character";
}
