/** POST /v1/embeddings in the OpenAI format (docs/api.md "POST /v1/embeddings"). */

import { z } from "zod";
import { Count, optional, TokenIds } from "./common.ts";

/** A string, a list of strings, a list of token ids, or a list of lists of token ids. */
export type EmbeddingInput = string | string[] | number[] | number[][];

/** A validated embeddings request (`encoding_format` defaulted). */
export interface OpenAIEmbeddingsRequest {
  model: string;
  input: EmbeddingInput;
  /** The `openai` client sends "base64" by default. */
  encoding_format: "float" | "base64";
  /** Keep the first N values and re-normalise (range checked against the model's dims). */
  dimensions?: number;
  user?: string;
  /**
   * Our extension (OpenAI clients send it as an extra body field): which catalog prompt to put
   * before the texts. Absent: the entry's `default_input_type` prompt (none when the entry sets
   * none), as on /v1/encode.
   */
  input_type?: "query" | "document";
}
/** An embeddings request as a client writes it. */
export interface OpenAIEmbeddingsRequestInput {
  model: string;
  input: EmbeddingInput;
  encoding_format?: "float" | "base64" | null;
  dimensions?: number | null;
  user?: string | null;
  input_type?: "query" | "document" | null;
}

/** Body of POST /v1/embeddings. */
export const OpenAIEmbeddingsRequestSchema: z.ZodType<
  OpenAIEmbeddingsRequest,
  OpenAIEmbeddingsRequestInput
> = z.object({
  model: z.string().min(1),
  input: z.union([
    z.string(),
    z.array(z.string()).min(1),
    TokenIds,
    z.array(TokenIds).min(1),
  ], {
    error: (iss) =>
      iss.input === undefined
        ? "required field is missing"
        : "expected a string, a non-empty list of strings, a list of token ids " +
          "or a list of lists of token ids",
  }),
  encoding_format: optional(z.enum(["float", "base64"])).transform((f) => f ?? "float"),
  dimensions: optional(z.number().int().positive()),
  user: optional(z.string()),
  input_type: optional(z.enum(["query", "document"])),
});

/** The inputs as a list: texts, or token-id lists. */
export function embeddingInputs(
  input: EmbeddingInput,
): { texts: string[] } | { tokenIds: number[][] } {
  if (typeof input === "string") return { texts: [input] };
  if (typeof input[0] === "string") return { texts: input as string[] };
  if (typeof input[0] === "number") return { tokenIds: [input as number[]] };
  return { tokenIds: input as number[][] };
}

/** One embedding: a Float32Array in memory (a list in JSON), or base64 of little-endian float32. */
export interface OpenAIEmbedding {
  object: "embedding";
  index: number;
  embedding: Float32Array | number[] | string;
}

/** Response of POST /v1/embeddings (always JSON). */
export interface OpenAIEmbeddingsResponse {
  object: "list";
  data: OpenAIEmbedding[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** Schema of {@link OpenAIEmbedding}. */
export const OpenAIEmbeddingSchema: z.ZodType<OpenAIEmbedding, OpenAIEmbedding> = z.object({
  object: z.literal("embedding"),
  index: Count,
  embedding: z.union([
    z.custom<Float32Array>((v) => v instanceof Float32Array),
    z.array(z.number()),
    z.string(),
  ]),
});

/** Schema of {@link OpenAIEmbeddingsResponse}. */
export const OpenAIEmbeddingsResponseSchema: z.ZodType<
  OpenAIEmbeddingsResponse,
  OpenAIEmbeddingsResponse
> = z.object({
  object: z.literal("list"),
  data: z.array(OpenAIEmbeddingSchema),
  model: z.string(),
  usage: z.object({ prompt_tokens: Count, total_tokens: Count }),
});
