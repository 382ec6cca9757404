/** POST /v1/score/{model}: request and response. */

import { z } from "zod";
import { Count, FreeObject, type FreeObjectValue, optional } from "./common.ts";
import { type Item, type ItemInput, ItemSchema, ItemsSchema } from "./item.ts";

/** A validated score request. */
export interface ScoreRequest {
  query: Item;
  items: Item[];
  instruction?: string;
  options?: FreeObjectValue;
}
/** A score request as a client writes it. */
export interface ScoreRequestInput {
  query: ItemInput;
  items: ItemInput[];
  instruction?: string | null;
  options?: FreeObjectValue | null;
}

/** Body of POST /v1/score/{model}; fields at top level, no `params` wrapper. */
export const ScoreRequestSchema: z.ZodType<ScoreRequest, ScoreRequestInput> = z.object({
  query: ItemSchema,
  items: ItemsSchema,
  instruction: optional(z.string()),
  options: optional(FreeObject),
});

/** One scored item; `item_id` is null when the item had no id. */
export interface ScoreEntry {
  item_id: string | null;
  score: number;
  /** 0 is the most relevant. */
  rank: number;
}

/** Schema of {@link ScoreEntry}. */
export const ScoreEntrySchema: z.ZodType<ScoreEntry, ScoreEntry> = z.object({
  item_id: z.string().nullable(),
  score: z.number(),
  rank: Count,
});

/** Response of POST /v1/score/{model}: `scores` sorted by score, highest first. */
export interface ScoreResponse {
  model: string;
  query_id: string | null;
  scores: ScoreEntry[];
}

/** Schema of {@link ScoreResponse}. */
export const ScoreResponseSchema: z.ZodType<ScoreResponse, ScoreResponse> = z.object({
  model: z.string(),
  query_id: z.string().nullable(),
  scores: z.array(ScoreEntrySchema),
});
