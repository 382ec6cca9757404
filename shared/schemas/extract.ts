/** POST /v1/extract/{model}: request, result types and response. */

import { z } from "zod";
import { Count, FreeObject, type FreeObjectValue, optional } from "./common.ts";
import { type Item, type ItemInput, ItemsSchema } from "./item.ts";

/** Validated extract params. */
export interface ExtractParams {
  /** Entity types for named-entity recognition. */
  labels?: string[];
  /** JSON schema for structured extraction. */
  output_schema?: FreeObjectValue;
  instruction?: string;
  options?: FreeObjectValue;
  /**
   * Confidence threshold, where the SIE TypeScript client puts it; the same as
   * `options.threshold`, which wins when both are sent.
   */
  threshold?: number;
}
/** Extract params as a client writes them. */
export interface ExtractParamsInput {
  labels?: string[] | null;
  output_schema?: FreeObjectValue | null;
  instruction?: string | null;
  options?: FreeObjectValue | null;
  threshold?: number | null;
}

/** `params` of extract. */
export const ExtractParamsSchema: z.ZodType<ExtractParams, ExtractParamsInput> = z.object({
  labels: optional(z.array(z.string())),
  output_schema: optional(FreeObject),
  instruction: optional(z.string()),
  options: optional(FreeObject),
  threshold: optional(z.number()),
});

/** A validated extract request; `params` is always present. */
export interface ExtractRequest {
  items: Item[];
  params: ExtractParams;
}
/** An extract request as a client writes it. */
export interface ExtractRequestInput {
  items: ItemInput[];
  params?: ExtractParamsInput | null;
}

/** Body of POST /v1/extract/{model}. */
export const ExtractRequestSchema: z.ZodType<ExtractRequest, ExtractRequestInput> = z.object({
  items: ItemsSchema,
  params: optional(ExtractParamsSchema).transform((p): ExtractParams => p ?? {}),
});

/** `[x, y, width, height]` in integer pixels. */
export type BBox = [number, number, number, number];
const bbox: z.ZodType<BBox, BBox> = z.tuple([z.number().int(), z.number().int(), Count, Count]);
const probability = z.number().min(0).max(1);

/** A named entity; `start`/`end` are character offsets into the item text, `bbox` for images. */
export interface Entity {
  text: string;
  label: string;
  score: number;
  start?: number;
  end?: number;
  bbox?: BBox;
}

/** Schema of {@link Entity}. */
export const EntitySchema: z.ZodType<Entity, Entity> = z.object({
  text: z.string(),
  label: z.string(),
  score: probability,
  start: Count.optional(),
  end: Count.optional(),
  bbox: bbox.optional(),
});

/** A relation between two entities. */
export interface Relation {
  head: string;
  tail: string;
  relation: string;
  score: number;
}

/** Schema of {@link Relation}. */
export const RelationSchema: z.ZodType<Relation, Relation> = z.object({
  head: z.string(),
  tail: z.string(),
  relation: z.string(),
  score: probability,
});

/** A class label with its probability. */
export interface Classification {
  label: string;
  score: number;
}

/** Schema of {@link Classification}. */
export const ClassificationSchema: z.ZodType<Classification, Classification> = z.object({
  label: z.string(),
  score: probability,
});

/** A detected object (docs/api.md): label, score and integer-pixel box. */
export interface DetectedObject {
  label: string;
  score: number;
  bbox: BBox;
}

/** Schema of {@link DetectedObject}. */
export const DetectedObjectSchema: z.ZodType<DetectedObject, DetectedObject> = z.object({
  label: z.string(),
  score: probability,
  bbox,
});

/** One result per input item; only the lists relevant to the model and params appear. */
export interface ExtractResult {
  id?: string | null;
  entities?: Entity[];
  relations?: Relation[];
  classifications?: Classification[];
  objects?: DetectedObject[];
  /** Structured extraction results. */
  data?: FreeObjectValue;
}

/** Schema of {@link ExtractResult}. */
export const ExtractResultSchema: z.ZodType<ExtractResult, ExtractResult> = z.object({
  id: z.string().nullable().optional(),
  entities: z.array(EntitySchema).optional(),
  relations: z.array(RelationSchema).optional(),
  classifications: z.array(ClassificationSchema).optional(),
  objects: z.array(DetectedObjectSchema).optional(),
  data: FreeObject.optional(),
});

/** Response of POST /v1/extract/{model}. */
export interface ExtractResponse {
  model: string;
  items: ExtractResult[];
}

/** Schema of {@link ExtractResponse}. */
export const ExtractResponseSchema: z.ZodType<ExtractResponse, ExtractResponse> = z.object({
  model: z.string(),
  items: z.array(ExtractResultSchema),
});
