/**
 * What the main thread knows of a model family without loading it: one `FamilyInfo` per family in
 * `infos.ts`. It must stay free of ONNX Runtime and the tokenizer (the adapters, which need them,
 * are listed apart in `adapters.ts` for the inference thread).
 */
import type { ServedModel } from "@svc/shared/catalog";
import {
  type Family,
  FAMILY_OPS,
  type ModelConfig,
  type ModelConfigInput,
  type OutputKind,
} from "@svc/shared/catalog/schema";
import type { ExtractParams } from "@svc/shared/schemas/extract";
import type { Common, ExtractPlan, PlanContext } from "../service/extract/common.ts";
import type { Ctx as DetectCtx } from "../catalog/detect/context.ts";
import type { GraphChoice } from "../catalog/detect/onnx_files.ts";
import type { PreprocessorReader } from "../catalog/detect/images.ts";
import type { Json } from "../catalog/detect/repo_view.ts";
import type { ImageOptionReader, ImageSpec } from "../images/spec.ts";

/** The I/O contract of one ONNX file of a family (checked by `catalog:verify`). */
export interface GraphContract {
  /** Catalog file role holding the graph (`model`, `vision_model`). */
  role: string;
  /** Inputs the family can feed; every declared graph input must be one of them. */
  feeds: readonly string[];
  /** Outputs the family reads: for each group, one of its names must be a graph output. */
  reads: readonly (readonly string[])[];
}

/** How an extract family turns a request into a batch for its adapter. */
export interface ExtractFamily {
  /** Build the plan; throws INVALID_INPUT on params the model cannot take. */
  plan(served: ServedModel, p: ExtractParams, c: Common, context: PlanContext): ExtractPlan;
  /** Request options only this family (and others naming them) reads: elsewhere they are a 400. */
  options?: readonly string[];
  /** True when it can fill `params.output_schema` (span models). */
  fillsSchema?: boolean;
}

/**
 * What configuring a model of the family from its repository's own files (`SVC_MODELS`) adds to
 * the steps every family shares (`worker/catalog/detect/detect.ts`).
 */
export interface FamilyDetect {
  /**
   * True when config.json `architectures` alone names this family; no two families' rules may
   * match one architecture (tests/worker/family_tables.test.ts).
   */
  architecture?(arch: string): boolean;
  /** Family settings (pooling, dims, labels, activation, image settings), each with its source. */
  configure?(ctx: DetectCtx, graphs: GraphChoice, out: ModelConfigInput): void | Promise<void>;
  /** The graph files, when the family runs other than one graph (CLIP's two towers). */
  chooseGraphs?(ctx: DetectCtx): GraphChoice;
  /** False for a family that reads no text (so has no tokenizer). */
  tokenizer?: false;
  /** True when it reads `preprocessor_config.json` (image families). */
  preprocessor?: true;
  /** Its own support files by role, given which paths the repository has. */
  supportFiles?(has: (path: string) => boolean): Record<string, string>;
  /** The longest input, when it is not a text's length in tokens. */
  maxLength?(ctx: DetectCtx): number;
}

/** How an image family reads its images (the main thread builds the pool's spec; no library). */
export interface FamilyImages {
  /** The resampling filter unless `family_options.resample` names one. */
  resample: "bicubic" | "bilinear";
  /** Geometry and normalisation from `family_options` (`images/spec.ts`). */
  spec(read: ImageOptionReader, kernel: ImageSpec["kernel"]): ImageSpec;
  /** Its own `family_options` from preprocessor_config.json (detection; `catalog/detect/images.ts`). */
  fromPreprocessor(pre: Json, read: PreprocessorReader): Record<string, unknown>;
}

/** One family, as the main thread sees it. */
export interface FamilyInfo<F extends Family = Family> {
  family: F;
  /** The op it serves, from the catalog schema's `FAMILY_OPS`. */
  op: typeof FAMILY_OPS[F];
  /**
   * Takes LoRA adapters: only encode families whose graph is one text encoder loaded by
   * `text/base.ts` (a patched copy of it is what an adapter runs).
   */
  lora: boolean;
  /**
   * On CPU, a quantised graph is checked against the float one by a load probe (inference
   * thread): families whose outputs compare as embeddings (cosine) or reranker scores.
   */
  int8Probe: boolean;
  /** What a model detected from its files reads and produces (before family settings refine it). */
  io: { inputs: ("text" | "image")[]; outputs: OutputKind[] };
  /** True when it reads exactly one image per item (its boxes belong to one image). */
  oneImagePerItem?: true;
  /** Tokens per ONNX batch of a detected model (vocabulary-wide outputs need smaller ones). */
  batchTokens: number;
  /** The graphs of an entry and what the family feeds and reads of each. */
  graphs(config: ModelConfig): GraphContract[];
  /** How detection configures it from its files (nothing beyond the shared steps if absent). */
  detect?: FamilyDetect;
  /** Image families: how they read images. */
  images?: FamilyImages;
  /** Extract families: the request plan. */
  extract?: ExtractFamily;
}

/** Tokens per ONNX batch unless a family says otherwise. */
export const DEFAULT_BATCH_TOKENS = 8192;

/** The token inputs every text graph may declare. */
export const TOKEN_FEEDS = ["input_ids", "attention_mask", "token_type_ids"] as const;

/** A family's info, its op taken from `FAMILY_OPS` (the one list of families and their ops). */
export function defineFamily<F extends Family>(
  family: F,
  info: Omit<FamilyInfo<F>, "family" | "op" | "batchTokens"> & { batchTokens?: number },
): FamilyInfo<F> {
  return {
    ...info,
    family,
    op: FAMILY_OPS[family],
    batchTokens: info.batchTokens ?? DEFAULT_BATCH_TOKENS,
  };
}

/** A text family with one graph fed tokens and read through one output group. */
export function textGraph(reads: readonly string[]): (config: ModelConfig) => GraphContract[] {
  return () => [{ role: "model", feeds: TOKEN_FEEDS, reads: [reads] }];
}
