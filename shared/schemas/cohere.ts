/**
 * Cohere's rerank and embed APIs (`POST /v1|v2/rerank`, `POST /v1|v2/embed`), as the `cohere-ai`
 * SDK, LangChain, LlamaIndex, Haystack and Dify send them (docs/api.md "Cohere-compatible
 * routes"). One schema per operation serves both API versions: v2's fields are v1's, and the
 * fields only one version has are optional. Fields the service has no use for (`priority`,
 * `max_chunks_per_doc`) are accepted and ignored, as unknown fields are everywhere.
 */
import { z } from "zod";
import { optional } from "./common.ts";

/** A document to rerank: its text, or an object with a `text` (kept whole for `return_documents`). */
export type RerankDocument = string | { text: string; [field: string]: unknown };

/** A validated rerank request. */
export interface CohereRerankRequest {
  /** Required here (the SDK's v1 types let it out: the service has no default reranker). */
  model: string;
  query: string;
  documents: RerankDocument[];
  top_n?: number;
  return_documents?: boolean;
  max_tokens_per_doc?: number;
  rank_fields?: string[];
}
/** A rerank request as a client writes it. */
export interface CohereRerankRequestInput {
  model: string;
  query: string;
  documents: RerankDocument[];
  top_n?: number | null;
  return_documents?: boolean | null;
  max_tokens_per_doc?: number | null;
  rank_fields?: string[] | null;
}

const ModelName = z.string().min(1, "a model name is required");

/** Body of `POST /v1/rerank` and `/v2/rerank`. */
export const CohereRerankRequestSchema: z.ZodType<CohereRerankRequest, CohereRerankRequestInput> = z
  .object({
    model: ModelName,
    query: z.string(),
    documents: z.array(z.union([z.string(), z.looseObject({ text: z.string() })], {
      error: "expected a string or an object with a `text` string",
    })).min(1, "must not be empty"),
    top_n: optional(z.number().int().positive()),
    return_documents: optional(z.boolean()),
    max_tokens_per_doc: optional(z.number().int().positive()),
    rank_fields: optional(z.array(z.string())),
  });

/** Cohere's input types. */
export const COHERE_INPUT_TYPES = [
  "search_query",
  "search_document",
  "classification",
  "clustering",
  "image",
] as const;
/** One of {@link COHERE_INPUT_TYPES}. */
export type CohereInputType = typeof COHERE_INPUT_TYPES[number];

/** Cohere's embedding types: `base64` is float32 bytes, the others as /v1/encode's dtypes. */
export const COHERE_EMBEDDING_TYPES = [
  "float",
  "int8",
  "uint8",
  "binary",
  "ubinary",
  "base64",
] as const;
/** One of {@link COHERE_EMBEDDING_TYPES}. */
export type CohereEmbeddingType = typeof COHERE_EMBEDDING_TYPES[number];

/** One part of a v2 embed input: a text, or an image as a data URI. */
export type CohereEmbedContent =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } };

/** One v2 embed input (`inputs[i]`): its parts, embedded together as one item. */
export interface CohereEmbedInput {
  content: CohereEmbedContent[];
}

/** A validated embed request (`truncate` upper-cased). */
export interface CohereEmbedRequest {
  model: string;
  texts?: string[];
  /** Images as data URIs (`data:image/png;base64,...`). */
  images?: string[];
  /** v2's content form (what `cohere-ai` 8 types): one item per input. */
  inputs?: CohereEmbedInput[];
  input_type?: CohereInputType;
  embedding_types?: CohereEmbeddingType[];
  truncate?: "NONE" | "START" | "END";
  output_dimension?: number;
  max_tokens?: number;
}
/** An embed request as a client writes it. */
export interface CohereEmbedRequestInput {
  model: string;
  texts?: string[] | null;
  images?: string[] | null;
  inputs?: CohereEmbedInput[] | null;
  input_type?: CohereInputType | null;
  embedding_types?: CohereEmbeddingType[] | null;
  truncate?: string | null;
  output_dimension?: number | null;
  max_tokens?: number | null;
}

/** Body of `POST /v1/embed` and `/v2/embed`. */
export const CohereEmbedRequestSchema: z.ZodType<CohereEmbedRequest, CohereEmbedRequestInput> = z
  .object({
    model: ModelName,
    texts: optional(z.array(z.string())),
    images: optional(z.array(z.string())),
    inputs: optional(z.array(z.object({
      content: z.array(z.discriminatedUnion("type", [
        z.object({ type: z.literal("text"), text: z.string() }),
        z.object({ type: z.literal("image_url"), image_url: z.object({ url: z.string() }) }),
      ], { error: 'expected {"type": "text", "text"} or {"type": "image_url", "image_url"}' }))
        .min(1, "must list at least one content part"),
    }))),
    input_type: optional(z.enum(COHERE_INPUT_TYPES)),
    embedding_types: optional(z.array(z.enum(COHERE_EMBEDDING_TYPES)).min(1)),
    truncate: optional(
      z.string().transform((t) => t.toUpperCase()).pipe(z.enum(["NONE", "START", "END"])),
    ),
    output_dimension: optional(z.number().int().positive()),
    max_tokens: optional(z.number().int().positive()),
  });

/** `meta` of an answer: the API version answered and what the request used. */
export interface CohereMeta {
  api_version: { version: string };
  billed_units: { input_tokens?: number; search_units?: number };
}

/** One reranked document. */
export interface CohereRerankResult {
  index: number;
  relevance_score: number;
  /** With `return_documents`: `{text}` for a string, the object as sent otherwise. */
  document?: Record<string, unknown>;
}

/** Answer of the rerank routes. */
export interface CohereRerankResponse {
  id: string;
  results: CohereRerankResult[];
  meta: CohereMeta;
}

/** Answer of the embed routes (`embeddings_floats`: v1 without `embedding_types`). */
export interface CohereEmbedResponse {
  id: string;
  response_type: "embeddings_by_type" | "embeddings_floats";
  embeddings: Partial<Record<CohereEmbeddingType, number[][] | string[]>> | number[][];
  texts: string[];
  meta: CohereMeta;
}
