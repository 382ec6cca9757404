/**
 * The family (adapter) interface. Adapters run inside an inference thread (a Web Worker):
 * they tokenise, build tensors, run the ONNX session and post-process. The registry and the
 * batcher never know which family they drive.
 */
import type { FamilyOp, ModelConfig } from "@svc/shared/catalog/schema";
import type { OutputType } from "@svc/shared/schemas/encode";
import type { ExtractBudget } from "./extract_budget.ts";
import type { ModelJsonBounds } from "../weights/model_json.ts";

/** Which API operation a batch serves. */
export type Op = FamilyOp;

/** One prepared image: a `[3, height, width]` float32 tensor plus its original geometry. */
export interface PixelInput {
  data: Float32Array<ArrayBuffer>;
  width: number;
  height: number;
  /** Image size after EXIF rotation: boxes are reported in these pixels. */
  original: { width: number; height: number };
  /** Original pixels that the model's normalised box coordinates 0..1 span. */
  frame: { width: number; height: number };
}

/** One unit of work (one input item, or one query/document pair for score). Structured-clone safe. */
export interface WorkItem {
  text?: string;
  /** Token ids given directly (OpenAI-style input); bypasses the tokenizer. */
  tokenIds?: number[];
  /**
   * Prepared images (decoded, resized and normalised on the image pool); their tensors are
   * transferred to the inference thread with the batch.
   */
  pixels?: PixelInput[];
  /** Score only: the query paired with `text`. */
  query?: string;
  /**
   * Extract on a relations model: the relation heads the client named (its entity mentions);
   * absent: the entities the first pass finds are the heads.
   */
  heads?: string[];
}

/**
 * What the inference thread needs to know about a batch besides its items; items are only batched
 * with equal params. Main-thread concerns (dtypes, Matryoshka) stay out of it; output types come
 * in only so that a multi-head family skips the heads nobody asked for.
 */
export interface WorkParams {
  op: Op;
  /** Text put before every input (instruction or catalog query/document prompt). */
  prefix?: string;
  /** `query` or `document`: ColBERT markers and query padding depend on it. */
  inputType?: "query" | "document";
  /**
   * Encode: the output types the batch returns. Families with several heads post-process (and
   * send back) only these; single-output families ignore it. Absent: every output.
   */
  outputs?: OutputType[];
  /**
   * Extract: entity types (NER), candidate classes (classification) or relation types (on a
   * relations model).
   */
  labels?: string[];
  /** Extract on a relations model: entity types of the first pass (relation heads and tails). */
  entityLabels?: string[];
  /** Extract with an output schema: one span label per schema field, decoded label by label. */
  fieldLabels?: string[];
  /**
   * Extract: the request's instruction, where the family reads one (GLiNER: words before the
   * text; NLI: before each hypothesis; GLiClass: after the label prompt).
   */
  prompt?: string;
  /** Zero-shot NLI: hypothesis template with one `{}` where the label goes. */
  hypothesisTemplate?: string;
  /** Classification: one independent score per label instead of one distribution. */
  multiLabel?: boolean;
  /** Extract: score threshold. */
  threshold?: number;
  /**
   * Most tokens of an item's own text (its prompt not counted), below the model's limit; for a
   * reranker, of the document. Absent: the model's limit alone.
   */
  maxTokens?: number;
  /**
   * What happens to a text longer than its room: absent, its end is dropped; `start`, its start;
   * `none`, the item is an error (400).
   */
  truncate?: "start" | "none";
  /**
   * The LoRA adapter (hub repository id) the batch runs with; absent: the base model. Part of
   * the batch key, so a batch never mixes adapters.
   */
  lora?: string;
}

/** An item after tokenisation, before tensors: `length` is its token count (drives sub-batching). */
export interface PreparedItem {
  /** Position of the item in the batch it came from. */
  index: number;
  /** Number of tokens the model will see (after truncation, with special tokens). */
  length: number;
  /** True when the item's input was cut to the model's length (counted in X-Truncated-Items). */
  truncated?: boolean;
  /** Set when the item cannot be run; it is answered with this error and skipped. */
  error?: { code: "INVALID_INPUT" | "INFERENCE_ERROR"; message: string };
  /**
   * Tokens the model reads for the item, every run together, as the family's cost model counts
   * them (GLiNER: windows × label prompts, and the relation pass); absent: `length`.
   */
  cost?: number;
}

/** Post-processed result for one item. Typed arrays are transferred to the main thread. */
export interface ItemOutput {
  dense?: Float32Array;
  sparse?: { indices: Int32Array; values: Float32Array; dims: number };
  multivector?: { values: Float32Array; numTokens: number; tokenDims: number };
  score?: number;
  entities?: { text: string; label: string; score: number; start: number; end: number }[];
  /** Detected objects, by descending score; `bbox` is `[x, y, width, height]` in pixels. */
  objects?: { label: string; score: number; bbox: [number, number, number, number] }[];
  classifications?: { label: string; score: number }[];
  relations?: { head: string; tail: string; relation: string; score: number }[];
  /**
   * Spans found for each of `WorkParams.fieldLabels` (same order), each list by descending score;
   * `start` (a string index) orders an array's values as in the text.
   */
  fieldSpans?: { text: string; score: number; start: number }[][];
  /** Tokens the model processed for this item (usage, metrics). */
  tokens: number;
  /** The item's input was cut to the model's length (set by the driver from its PreparedItem). */
  truncated?: boolean;
  /** Set when this item alone was rejected (e.g. token ids outside the vocabulary). */
  error?: { code: "INVALID_INPUT" | "INFERENCE_ERROR"; message: string };
}

/** What a family may ask about its batch while it runs. */
export interface RunControl {
  /**
   * True once the client of batch item `index` (a PreparedItem's `index`) went away: a family
   * that runs an item in several ONNX runs (windows, label pairs) skips its runs not yet started.
   */
  gone(index: number): boolean;
}

/** A loaded model: one per inference thread. */
export interface ModelAdapter<P extends PreparedItem = PreparedItem> {
  /** Tokenise one item (with truncation to the model's max length). */
  prepare(item: WorkItem, index: number, params: WorkParams): P;
  /** Build tensors for a group of prepared items, run the session, post-process. */
  run(group: P[], params: WorkParams, control?: RunControl): Promise<RunResult>;
  /** Release the ONNX sessions. */
  dispose(): Promise<void>;
}

/** Outputs of one `run` with its phase timings (ms). */
export interface RunResult {
  outputs: ItemOutput[];
  inferenceMs: number;
  postprocessingMs: number;
}

/**
 * The model load options, declared once: what a family factory receives to build its adapter,
 * what the main thread's `load` message carries, and (minus the device settings) what the
 * registry starts a runner from.
 */
export interface AdapterContext {
  config: ModelConfig;
  /** Local absolute paths of the model's files, by role (see ModelConfig.files). */
  files: Record<string, string>;
  /** ONNX execution providers to try, in order (e.g. ["cuda", "cpu"]). */
  executionProviders: string[];
  /** Intra-op threads for ONNX Runtime (0 = runtime default). */
  intraOpThreads: number;
  /** Most padded tokens in one ONNX run (families that cut their own runs respect it too). */
  runTokenBudget: number;
  /** Bounds of one extract item's work (extract families; absent: the defaults). */
  extractBudget?: ExtractBudget;
  /** Bounds of the model's JSON files (tokenizer, configuration; absent: the defaults). */
  jsonBounds?: ModelJsonBounds;
  /**
   * The model graph built in memory (a LoRA adapter merged into `files.model`), run instead of
   * the file. Only the text families of `LORA_FAMILIES` read it.
   */
  modelBytes?: Uint8Array;
}

/** Builds a family's adapter. */
export type AdapterFactory = (ctx: AdapterContext) => Promise<ModelAdapter>;
