/** POST /v1/encode/{model}: request, vectors and response. */

import { z } from "zod";
import type { NdArray } from "../codec/ndarray.ts";
import {
  Count,
  F16,
  F32,
  FreeObject,
  type FreeObjectValue,
  I32,
  I8,
  Nd,
  optional,
  U8,
} from "./common.ts";
import { type Item, type ItemInput, ItemsSchema } from "./item.ts";
import { type TimingInfo, TimingInfoSchema } from "./timing.ts";

/** Output types an encode request may ask for. */
export const OUTPUT_TYPES = ["dense", "sparse", "multivector"] as const;
/** One of {@link OUTPUT_TYPES}. */
export type OutputType = typeof OUTPUT_TYPES[number];

/**
 * Precisions of returned vectors: `float32`, `float16`, `int8`, `binary`, plus `uint8` (min-max per vector) and `ubinary`
 * (the same packed bytes as `binary`), which the SIE clients send (docs/api.md "Output dtypes").
 */
export const OUTPUT_DTYPES = ["float32", "float16", "int8", "uint8", "binary", "ubinary"] as const;
/** One of {@link OUTPUT_DTYPES}. */
export type OutputDtype = typeof OUTPUT_DTYPES[number];

/** Validated encode params, defaults applied. */
export interface EncodeParams {
  /**
   * Never empty, no duplicates; absent when none was requested: the server then answers the
   * model's default (`dense` for models that have it, docs/api.md "Encode").
   */
  output_types?: OutputType[];
  instruction?: string;
  output_dtype: OutputDtype;
  /** Runtime options: `profile`, `lora_id` (a model-hub repository id), others. */
  options?: FreeObjectValue;
}
/** Encode params as a client writes them. */
export interface EncodeParamsInput {
  output_types?: OutputType[] | null;
  instruction?: string | null;
  output_dtype?: OutputDtype | null;
  options?: FreeObjectValue | null;
}

/** `params` of encode; default `output_dtype` "float32"; `output_types` absent when none asked. */
export const EncodeParamsSchema: z.ZodType<EncodeParams, EncodeParamsInput> = z.object({
  output_types: optional(z.array(z.enum(OUTPUT_TYPES)).max(OUTPUT_TYPES.length * 4))
    // None requested (absent or empty) leaves the choice to the model; duplicates collapse.
    .transform((t): OutputType[] | undefined => (t && t.length > 0 ? [...new Set(t)] : undefined)),
  instruction: optional(z.string()),
  output_dtype: optional(z.enum(OUTPUT_DTYPES)).transform((d): OutputDtype => d ?? "float32"),
  options: optional(FreeObject),
});

/** A validated encode request; `params` is always present. */
export interface EncodeRequest {
  items: Item[];
  params: EncodeParams;
}
/** An encode request as a client writes it. */
export interface EncodeRequestInput {
  items: ItemInput[];
  params?: EncodeParamsInput | null;
}

/** Body of POST /v1/encode/{model}. */
export const EncodeRequestSchema: z.ZodType<EncodeRequest, EncodeRequestInput> = z.object({
  items: ItemsSchema,
  params: optional(EncodeParamsSchema).transform((p) => p ?? EncodeParamsSchema.parse({})),
});

/**
 * A dense vector; `values` follows `dtype` (binary and ubinary: packed bits, ceil(dims/8) bytes).
 */
export type DenseVector =
  | { dims: number; dtype: "float32"; values: Float32Array }
  | { dims: number; dtype: "float16"; values: Uint16Array }
  | { dims: number; dtype: "int8"; values: Int8Array }
  | { dims: number; dtype: "uint8" | "binary" | "ubinary"; values: Uint8Array };

/** Schema of {@link DenseVector}. */
export const DenseVectorSchema: z.ZodType<DenseVector, DenseVector> = z.discriminatedUnion(
  "dtype",
  [
    z.object({ dims: Count, dtype: z.literal("float32"), values: F32 }),
    z.object({ dims: Count, dtype: z.literal("float16"), values: F16 }),
    z.object({ dims: Count, dtype: z.literal("int8"), values: I8 }),
    z.object({ dims: Count, dtype: z.literal("uint8"), values: U8 }),
    z.object({ dims: Count, dtype: z.literal("binary"), values: U8 }),
    z.object({ dims: Count, dtype: z.literal("ubinary"), values: U8 }),
  ],
);

/**
 * A sparse vector: int32 indices; values float32, or float16 bits (the integer and binary dtypes
 * do not apply).
 */
export type SparseVector =
  | { dims: number; dtype: "float32"; indices: Int32Array; values: Float32Array }
  | { dims: number; dtype: "float16"; indices: Int32Array; values: Uint16Array };

/** Schema of {@link SparseVector}. */
export const SparseVectorSchema: z.ZodType<SparseVector, SparseVector> = z.discriminatedUnion(
  "dtype",
  [
    z.object({ dims: Count, dtype: z.literal("float32"), indices: I32, values: F32 }),
    z.object({ dims: Count, dtype: z.literal("float16"), indices: I32, values: F16 }),
  ],
);

/**
 * Per-token vectors: one NdArray of shape [num_tokens, token_dims] (binary and ubinary:
 * [num_tokens, ceil(token_dims/8)]), never a list of rows.
 */
export interface MultiVector {
  token_dims: number;
  num_tokens: number;
  dtype: OutputDtype;
  values: NdArray;
}

/** Schema of {@link MultiVector}. */
export const MultiVectorSchema: z.ZodType<MultiVector, MultiVector> = z.object({
  token_dims: Count,
  num_tokens: Count,
  dtype: z.enum(OUTPUT_DTYPES),
  values: Nd,
});

/** One result per input item; `id` is left out when the item had none. */
export interface EncodeResult {
  id?: string;
  dense?: DenseVector;
  sparse?: SparseVector;
  multivector?: MultiVector;
}

/** Schema of {@link EncodeResult}. */
export const EncodeResultSchema: z.ZodType<EncodeResult, EncodeResult> = z.object({
  id: z.string().optional(),
  dense: DenseVectorSchema.optional(),
  sparse: SparseVectorSchema.optional(),
  multivector: MultiVectorSchema.optional(),
});

/** Response of POST /v1/encode/{model}, in memory. */
export interface EncodeResponse {
  model: string;
  items: EncodeResult[];
  timing: TimingInfo;
}

/** Schema of {@link EncodeResponse}. */
export const EncodeResponseSchema: z.ZodType<EncodeResponse, EncodeResponse> = z.object({
  model: z.string(),
  items: z.array(EncodeResultSchema),
  timing: TimingInfoSchema,
});
