/**
 * What the client sends and returns. Vectors are typed arrays in both wire formats: float32 and
 * float16 values as Float32Array, int8 as Int8Array, uint8 and the packed binary dtypes as
 * Uint8Array, sparse indices as Int32Array. Types are the client's own (no zod, no Deno) so the
 * module runs unchanged in Deno, Node and browsers.
 */

/** An image: its encoded bytes and a format hint. */
export interface ImageInput {
  data: Uint8Array;
  format?: "jpeg" | "png" | "webp";
}

/** One input: text and/or images; `id` is echoed back. A bare string means `{text}`. */
export type ItemInput = string | { id?: string; text?: string; images?: ImageInput[] };

/** Precision of returned vectors. */
export type OutputDtype = "float32" | "float16" | "int8" | "uint8" | "binary" | "ubinary";

/** Values of one vector at its dtype. */
export type VectorValues = Float32Array | Int8Array | Uint8Array;

/** A dense vector. `dims` is the model's dimension, also for the packed binary dtypes. */
export interface DenseVector {
  dims: number;
  dtype: OutputDtype;
  values: VectorValues;
}

/** A sparse vector: the non-zero vocabulary entries. */
export interface SparseVector {
  dims: number;
  dtype: OutputDtype;
  indices: Int32Array;
  values: Float32Array;
}

/** One vector per token (views into one buffer). */
export interface MultiVector {
  token_dims: number;
  num_tokens: number;
  dtype: OutputDtype;
  values: VectorValues[];
}

/** Server-side timing of one request, in ms. */
export interface Timing {
  total_ms: number;
  queue_ms: number;
  tokenization_ms: number;
  inference_ms: number;
  postprocessing_ms: number | null;
}

/** Encode parameters (`params` of the request). */
export interface EncodeParams {
  output_types?: ("dense" | "sparse" | "multivector")[];
  output_dtype?: OutputDtype;
  instruction?: string;
  /** Runtime options: `input_type`, `profile`, `dimensions`, `lora_id`, … */
  options?: Record<string, unknown>;
}

/** One encode result. */
export interface EncodeResult {
  id?: string;
  dense?: DenseVector;
  sparse?: SparseVector;
  multivector?: MultiVector;
}

/** Answer of `encode`. */
export interface EncodeResponse {
  model: string;
  items: EncodeResult[];
  timing?: Timing;
}

/** Score options (top-level fields of the request besides query and items). */
export interface ScoreOptions {
  instruction?: string;
  options?: Record<string, unknown>;
}

/** One scored item. */
export interface ScoreEntry {
  item_id: string | null;
  score: number;
  rank: number;
}

/** Answer of `score`: entries sorted by score, rank 0 the best. */
export interface ScoreResponse {
  model: string;
  query_id: string | null;
  scores: ScoreEntry[];
  timing?: Timing;
}

/** Extract parameters (`params` of the request). */
export interface ExtractParams {
  labels?: string[];
  output_schema?: Record<string, unknown>;
  instruction?: string;
  options?: Record<string, unknown>;
}

/** An entity span; `start`/`end` are code-point offsets into the item's text. */
export interface Entity {
  text: string;
  label: string;
  score: number;
  start: number;
  end: number;
  bbox?: number[];
}

/** A relation between two entities. */
export interface Relation {
  head: string;
  tail: string;
  relation: string;
  score: number;
}

/** A class label with its probability. */
export interface Classification {
  label: string;
  score: number;
}

/** An object found in an image; `bbox` is `[x, y, width, height]` in pixels. */
export interface DetectedObject {
  label: string;
  score: number;
  bbox: number[];
}

/**
 * One extract result. This release's servers send `id` (`item-{i}` for an item sent without one)
 * and all four lists (empty when the model fills none), `data` with a schema; the fields stay
 * optional for servers of earlier releases.
 */
export interface ExtractResult {
  id?: string;
  entities?: Entity[];
  relations?: Relation[];
  classifications?: Classification[];
  objects?: DetectedObject[];
  data?: Record<string, unknown>;
}

/** Answer of `extract`. */
export interface ExtractResponse {
  model: string;
  items: ExtractResult[];
  timing?: Timing;
}

/**
 * One catalog entry with its live state, as both servers send it (`family` and `bundle` beside the
 * specified fields). The same type the servers build: type-only, so nothing of zod is bundled.
 */
export type { CatalogModelInfo as ModelInfo } from "@svc/shared/catalog/model_info";
export type { ModelProfileInfo } from "@svc/shared/schemas/models";

/** Request of `embeddings` (OpenAI-compatible). */
export interface EmbeddingsRequest {
  model: string;
  input: string | string[];
  dimensions?: number;
  /** Model input type (`query` or `document`) when the model has prompts. */
  input_type?: string;
}

/** Answer of `embeddings`, with each embedding as a Float32Array. */
export interface EmbeddingsResponse {
  object: "list";
  model: string;
  data: { object: "embedding"; index: number; embedding: Float32Array }[];
  usage: { prompt_tokens: number; total_tokens: number };
}
