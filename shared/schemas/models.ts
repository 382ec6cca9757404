/** Model catalog resources: GET /v1/models and GET /v1/models/{model}. */

import { z } from "zod";
import type { ErrorCode } from "../errors.ts";
import { Count } from "./common.ts";
import { ErrorCodeSchema } from "./error_body.ts";

/** Lifecycle states a model can report in ModelInfo (`failed`: the last load failed). */
export const MODEL_STATES = ["available", "loading", "loaded", "unloading", "failed"] as const;
/** One of {@link MODEL_STATES}. */
export type ModelState = typeof MODEL_STATES[number];

/** What a profile enables. */
export interface ModelProfileInfo {
  is_default: boolean;
  output_types: string[];
  /** Similarity metric per output type, e.g. `{dense: "cosine"}`. */
  output_similarity: Record<string, string>;
}

/** Schema of {@link ModelProfileInfo}. */
export const ModelProfileInfoSchema: z.ZodType<ModelProfileInfo, ModelProfileInfo> = z.object({
  is_default: z.boolean(),
  output_types: z.array(z.string()),
  output_similarity: z.record(z.string(), z.string()),
});

/** A LoRA adapter of a loaded model (encode models; see docs/api.md "LoRA adapters"). */
export interface LoraInfo {
  /** The adapter's hub repository id. */
  id: string;
  state: "loading" | "loaded";
  /** Memory of the adapter's session (counted in the model's memory). */
  memory_bytes: number;
}

/** Schema of {@link LoraInfo}. */
export const LoraInfoSchema: z.ZodType<LoraInfo, LoraInfo> = z.object({
  id: z.string(),
  state: z.enum(["loading", "loaded"]),
  memory_bytes: Count,
});

/** What the load probe measured: one number, the bar it had to clear, and on how many inputs. */
export interface QuantizationProbe {
  /**
   * `mean_cosine`: mean cosine of the quantised graph's embeddings to the float graph's;
   * `score_correlation`: correlation of its scores with the float graph's. Both must be ≥
   * `threshold`.
   */
  metric: "mean_cosine" | "score_correlation";
  value: number;
  threshold: number;
  /** Probe inputs run through both graphs (texts, or query/document pairs). */
  inputs: number;
}

/**
 * Whether a model runs a quantised (int8) graph on this worker, and why (docs/catalog.md
 * "Quantised graphs"): checked against its float graph by a probe at load, or not checked.
 */
export interface QuantizationInfo {
  /** The quantised graph (repository path). */
  graph: string;
  /** The float graph it is checked against; absent when there is none beside it. */
  float_graph?: string;
  /** The graph that runs (or will, until a load decides otherwise). */
  serving: "quantized" | "float";
  /** True once the load probe compared both graphs on this worker's CPU. */
  checked: boolean;
  probe?: QuantizationProbe;
  /** One sentence saying what was decided and why (the log says the same). */
  reason: string;
}

/** Schema of {@link QuantizationInfo}. */
export const QuantizationInfoSchema: z.ZodType<QuantizationInfo, QuantizationInfo> = z.object({
  graph: z.string(),
  float_graph: z.string().optional(),
  serving: z.enum(["quantized", "float"]),
  checked: z.boolean(),
  probe: z.object({
    metric: z.enum(["mean_cosine", "score_correlation"]),
    value: z.number(),
    threshold: z.number(),
    inputs: Count,
  }).optional(),
  reason: z.string(),
});

/** A model in the catalog; `state` and `last_error` tell the load state (docs/api.md "Models"). */
export interface ModelInfo {
  /** May contain `/` (and `:` for a profile). */
  name: string;
  /** `text`, `image`. */
  inputs: string[];
  /** `dense`, `sparse`, `multivector`; a reranker lists `score`. */
  outputs: string[];
  /** Dimension per output type; empty for rerankers. */
  dims: Record<string, number>;
  /** True when the model is in (GPU) memory. */
  loaded: boolean;
  /** The model's maximum tokens per input. */
  max_sequence_length: number;
  /**
   * The longest item this worker runs, in tokens; longer items are truncated. On a CPU worker
   * `SVC_CPU_MAX_ITEM_TOKENS` may lower it below `max_sequence_length`. Absent from catalog
   * entries the router describes without a worker.
   */
  max_item_tokens?: number;
  profiles: Record<string, ModelProfileInfo>;
  state?: ModelState;
  last_error?: { code: ErrorCode; message: string } | null;
  /** LoRA adapters loading or loaded on the model (models that take adapters). */
  loras?: LoraInfo[];
  /** Present when the model's graph on this worker is (or could have been) a quantised one. */
  quantization?: QuantizationInfo;
}

/** Schema of {@link ModelInfo}. */
export const ModelInfoSchema: z.ZodType<ModelInfo, ModelInfo> = z.object({
  name: z.string(),
  inputs: z.array(z.string()),
  outputs: z.array(z.string()),
  dims: z.record(z.string(), Count),
  loaded: z.boolean(),
  max_sequence_length: Count,
  max_item_tokens: Count.optional(),
  profiles: z.record(z.string(), ModelProfileInfoSchema),
  state: z.enum(MODEL_STATES).optional(),
  last_error: z.object({ code: ErrorCodeSchema, message: z.string() }).nullable().optional(),
  loras: z.array(LoraInfoSchema).optional(),
  quantization: QuantizationInfoSchema.optional(),
});

/** Response of GET /v1/models. */
export interface ModelsListResponse {
  models: ModelInfo[];
}

/** Schema of {@link ModelsListResponse}. */
export const ModelsListResponseSchema: z.ZodType<ModelsListResponse, ModelsListResponse> = z
  .object({ models: z.array(ModelInfoSchema) });
