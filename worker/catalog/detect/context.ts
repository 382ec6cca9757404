/**
 * The state detection's steps share, and the helpers the family steps use on it (reading a graph's
 * signature once, a file named explicitly, the "export it" error, image settings). Each family's
 * own detection step is in its folder (`worker/families/<family>/`, its info's `detect`).
 */
import type { DetectionRecord, Family, ModelConfigInput } from "@svc/shared/catalog/schema";
import { type GraphSignature, type GraphValue, readGraphSignature } from "@svc/onnx";
import type { EntryOptions } from "../model_entries.ts";
import { labelList } from "../../families/labels.ts";
import type { FamilyImages } from "../../families/info.ts";
import { DetectionError, OVERRIDE_FILE, REPOSITORY } from "./errors.ts";
import { imageOptions, PREPROCESSOR } from "./images.ts";
import { hasCheckpointWeights } from "./onnx_files.ts";
import type { Recorder } from "./record.ts";
import { isJsonObject, type Json, type RepoView } from "./repo_view.ts";
import type { StFacts } from "./sentence_transformers.ts";

/** What detection needs besides the repository. */
export interface DetectInput {
  /** The served id. */
  id: string;
  view: RepoView;
  /** True when reading a graph costs nothing (a local directory); false when it means a download. */
  graphsAreLocal: boolean;
  /** Settings given in the SVC_MODELS entry (`;key=value`). */
  entryOptions: EntryOptions;
  source: DetectionRecord["source"];
  /** What `optimum-cli export onnx --model …` should be given (hub id, or the directory). */
  exportFrom: string;
  /** The bundle a model of `family` is served in on this worker. */
  bundleFor(family: Family): string;
}

/** Detection state shared by the steps. */
export interface Ctx {
  input: DetectInput;
  view: RepoView;
  rec: Recorder;
  config: Json | undefined;
  st: StFacts | undefined;
  gliner: Json | undefined;
  /** tokenizer_config.json and preprocessor_config.json, once the files are chosen. */
  tokenizerConfig?: Json;
  preprocessor?: unknown;
  /** Read once, on demand. */
  signature?: Promise<GraphSignature>;
}

export function asObject(v: unknown, file: string): Json | undefined {
  if (v === undefined) return undefined;
  if (!isJsonObject(v)) {
    throw new DetectionError(file, undefined, "is not a JSON object", "Fix the file");
  }
  return v;
}

/** A file named explicitly (`files.<role>`): it must be one of the repository's. */
export function givenFile(ctx: Ctx, role: string): string | undefined {
  const path = ctx.rec.givenIn<unknown>("files", role);
  if (path === undefined) return undefined;
  if (typeof path !== "string" || !ctx.view.files.has(path)) {
    throw new DetectionError(
      ctx.rec.overrides.origin.files,
      `files.${role}`,
      `names ${JSON.stringify(path)}, which is not a file of the repository`,
      "Name a file of the repository by its path inside it (e.g. onnx/model.onnx)",
    );
  }
  return path;
}

/** The repository has no ONNX weights: say so, and how to make them. */
export function noOnnx(ctx: Ctx): DetectionError {
  const ckpt = hasCheckpointWeights(ctx.view.files);
  const what = ckpt ? `holds ${ckpt} (PyTorch weights) but no ONNX graph` : "holds no ONNX graph";
  const from = ctx.input.exportFrom;
  return new DetectionError(
    REPOSITORY,
    undefined,
    `${what} (looked for onnx/model.onnx and model.onnx): this server runs ONNX weights only`,
    `Export them with: optimum-cli export onnx --model ${from} DIR , then serve DIR ` +
      "(SVC_MODELS=ID=DIR)",
  );
}

/** The declared inputs and outputs of a repository graph (read once). */
export function signatureOf(ctx: Ctx, path: string): Promise<GraphSignature> {
  ctx.signature ??= (async () => {
    const local = await ctx.view.local(path);
    try {
      return await readGraphSignature(local);
    } catch (err) {
      throw new DetectionError(
        path,
        undefined,
        `cannot be read as an ONNX model (${(err as Error).message})`,
        "Export it again",
      );
    }
  })();
  return ctx.signature;
}

/** The graph's signature when it is free to read (a directory), else undefined. */
export function localSignature(ctx: Ctx, path: string): Promise<GraphSignature | undefined> {
  return ctx.input.graphsAreLocal ? signatureOf(ctx, path) : Promise.resolve(undefined);
}

export function describe(values: readonly GraphValue[]): string {
  return values.map((v) => `${v.name} [${v.dims.join(", ")}]`).join(", ") || "none";
}

/** Image settings from preprocessor_config.json, unless the override file gives them. */
export function imageSettings(
  ctx: Ctx,
  images: FamilyImages | undefined,
): Record<string, unknown> {
  const given = ctx.rec.overrides.values.family_options;
  if (isJsonObject(given) && (given.image_mean !== undefined || given.image_size !== undefined)) {
    return {};
  }
  const opts = imageOptions(images, ctx.preprocessor);
  for (const [k, v] of Object.entries(opts)) {
    ctx.rec.set(`family_options.${k}`, v, `${PREPROCESSOR} ${k}`);
  }
  return opts;
}

/**
 * A classifier's labels (`family_options.id2label`): given, else config.json `id2label`;
 * `check` refuses labels the family cannot read.
 */
export function configureId2label(
  ctx: Ctx,
  out: ModelConfigInput,
  check?: (labels: string[]) => void,
): void {
  const { rec, config } = ctx;
  const fo = out.family_options!;
  const given = rec.givenIn("family_options", "id2label");
  const labels = labelList(given ?? config?.id2label);
  if (!labels) {
    throw new DetectionError(
      "config.json",
      "id2label",
      "is missing or not a map of class ids to names",
      `Say it explicitly: put {"family_options": {"id2label": ["O", "B-PER", …]}} in ` +
        `${OVERRIDE_FILE}`,
    );
  }
  check?.(labels);
  fo.id2label = given ?? rec.set("family_options.id2label", labels, "config.json id2label");
}
