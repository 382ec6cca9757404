/** The ModelInfo document of a catalog entry: one builder for worker and router. */
import type { LoraInfo, ModelInfo, ModelState, QuantizationInfo } from "../schemas/models.ts";
import type { ErrorCode } from "../errors.ts";
import type { DetectionRecord, ModelConfig, OutputKind } from "./schema.ts";
import { isFamily } from "./schema.ts";

/**
 * ModelInfo plus the extras both sides send: `family`, `bundle`, and `servable` (false for an
 * entry that is listed but cannot be served: a family this release does not know, an `SVC_MODELS`
 * entry still being configured);
 * `detected` for an entry configured from its repository's files (`SVC_MODELS`).
 */
export type CatalogModelInfo = ModelInfo & {
  family: string;
  bundle: string;
  servable: boolean;
  detected?: DetectedInfo;
};

/**
 * What `/v1/models/{model}` shows of a detected entry: where it came from, the files it runs (by
 * role, as this worker runs them), and each setting with the file and field it was read from.
 */
export interface DetectedInfo {
  source: DetectionRecord["source"];
  files: Record<string, string>;
  settings: DetectionRecord["settings"];
}

/** Embedding outputs: a model with any of them can also score (by similarity). */
const EMBEDDING_OUTPUTS: ReadonlySet<OutputKind> = new Set(["dense", "sparse", "multivector"]);

/**
 * What a model does, for ModelInfo `outputs`: its catalog outputs, plus `score` for every model
 * with an embedding output (score ranks items by embedding similarity with any encode model).
 */
export function operationsOf(outputs: readonly OutputKind[]): OutputKind[] {
  const all = [...outputs];
  if (!all.includes("score") && all.some((o) => EMBEDDING_OUTPUTS.has(o))) all.push("score");
  return all;
}

/**
 * Dimension per embedding output as served under `modelProfile` (a reranker has none): a profile
 * whose options set `dimensions` (Matryoshka) answers dense vectors of that size.
 */
export function servedDims(config: ModelConfig, modelProfile?: string): Record<string, number> {
  const dims: Record<string, number> = {};
  for (const [k, v] of Object.entries(config.dims)) {
    if (k === "dense" || k === "sparse" || k === "multivector") dims[k] = v;
  }
  const cut = modelProfile === undefined
    ? undefined
    : config.profiles[modelProfile]?.options?.dimensions;
  if (typeof cut === "number" && dims.dense !== undefined) dims.dense = Math.min(cut, dims.dense);
  return dims;
}

/**
 * ModelInfo of `config` served under `name` (its id, or `id:profile`, whose `modelProfile` then
 * sets the dims), with live `state` and `last_error` when the caller knows them. `dims` lists
 * embedding outputs only (a reranker's is empty, as the API says).
 */
export function modelInfoOf(
  config: ModelConfig,
  live: {
    name?: string;
    modelProfile?: string;
    state?: ModelState;
    lastError?: { code: ErrorCode; message: string } | null;
    loras?: LoraInfo[];
    /** The model's own max_sequence_length, when `config` holds a lower run length. */
    maxSequenceLength?: number;
    /** The longest item a worker runs (`max_item_tokens`); absent where nothing runs it. */
    maxItemTokens?: number;
    /** The worker's quantised-graph decision (absent: none involved, or no worker). */
    quantization?: QuantizationInfo;
    /** The files the worker runs, by role, when they differ from `config.files`. */
    files?: Record<string, string>;
  } = {},
): CatalogModelInfo {
  const modelProfiles: ModelInfo["profiles"] = {};
  for (const [p, v] of Object.entries(config.profiles)) {
    modelProfiles[p] = {
      is_default: v.is_default,
      output_types: v.output_types,
      output_similarity: v.output_similarity,
    };
  }
  const dims = servedDims(config, live.modelProfile);
  const state = live.state ?? "available";
  return {
    name: live.name ?? config.id,
    inputs: config.inputs,
    outputs: operationsOf(config.outputs),
    dims,
    loaded: state === "loaded",
    max_sequence_length: live.maxSequenceLength ?? config.max_sequence_length,
    ...(live.maxItemTokens === undefined ? {} : { max_item_tokens: live.maxItemTokens }),
    profiles: modelProfiles,
    state,
    last_error: live.lastError ?? null,
    family: config.family,
    bundle: config.bundle,
    servable: isFamily(config.family),
    ...(live.loras && live.loras.length > 0 ? { loras: live.loras } : {}),
    ...(live.quantization ? { quantization: live.quantization } : {}),
    ...(config.detected
      ? {
        detected: {
          source: config.detected.source,
          files: live.files ?? config.files,
          settings: live.quantization
            ? { ...config.detected.settings, int8: int8Setting(live.quantization) }
            : config.detected.settings,
        },
      }
      : {}),
  };
}

/** The `int8` setting of a detected entry: the graph that runs, with why. */
function int8Setting(q: QuantizationInfo): { value: string; from: string } {
  const runs = q.serving === "quantized" ? q.graph : q.float_graph ?? q.graph;
  return { value: runs, from: `${q.checked ? "load probe" : "not checked"}: ${q.reason}` };
}

/** An `SVC_MODELS` entry whose configuration is not known yet (being read, or unreadable). */
export interface PendingEntryFacts {
  id: string;
  bundle: string;
  /** `loading` while its files are read, `failed` when they do not say how to serve it. */
  state: "loading" | "failed";
  lastError: { code: ErrorCode; message: string } | null;
  source: DetectionRecord["source"];
}

/**
 * ModelInfo of a pending entry: listed with its state and reason, nothing served yet (no
 * inputs, outputs or profiles; `family` is `unknown` until its files said what it is).
 */
export function pendingModelInfo(p: PendingEntryFacts): CatalogModelInfo {
  return {
    name: p.id,
    inputs: [],
    outputs: [],
    dims: {},
    loaded: false,
    max_sequence_length: 0,
    profiles: {},
    state: p.state,
    last_error: p.lastError,
    family: "unknown",
    bundle: p.bundle,
    servable: false,
    detected: { source: p.source, files: {}, settings: {} },
  };
}

/** An entry of OpenAI's model list (`openai.models.list()` reads these from `data`). */
export interface OpenAiModelEntry {
  id: string;
  object: "model";
  /** Unix seconds; this process's start (when it began serving the model). */
  created: number;
  /** The organisation part of the id (`BAAI` for `BAAI/bge-m3`), else `local`. */
  owned_by: string;
}

const STARTED_S = Math.floor(Date.now() / 1000);

/** OpenAI's fields for the model named `name` (a list entry, or beside one ModelInfo). */
export function openAiModelEntry(name: string): OpenAiModelEntry {
  const slash = name.indexOf("/");
  return {
    id: name,
    object: "model",
    created: STARTED_S,
    owned_by: slash > 0 ? name.slice(0, slash) : "local",
  };
}

/**
 * `GET /v1/models/{model}` body: the ModelInfo with OpenAI's `id`, `object`, `created` and
 * `owned_by` beside it (`openai.models.retrieve(id)` reads them; additive, like the list).
 */
export function modelDocument<M extends { name: string }>(info: M): M & OpenAiModelEntry {
  return { ...info, ...openAiModelEntry(info.name) };
}

/**
 * `GET /v1/models` body: the service's `models` list, with OpenAI's `object: "list"` and `data`
 * beside it (additive: clients of either API read their own fields).
 */
export function modelListBody<M extends { name: string }>(
  models: M[],
): { models: M[]; object: "list"; data: OpenAiModelEntry[] } {
  return { models, object: "list", data: models.map((m) => openAiModelEntry(m.name)) };
}
