/** The model configuration format: one file per model, shared by router and worker. */
import type { OpKind } from "../operations.ts";
import { z } from "zod";
import { SLUG_RE } from "../fleet/protocol.ts";

/** The API operations a model family serves. */
export type FamilyOp = OpKind;

/**
 * Model families, each with the operation it serves: the one list of them. Every family has its
 * folder in `worker/families/` (its info in `FAMILY_INFOS`, its adapter in `FAMILY_ADAPTERS`, which
 * the compiler checks); encode families also answer score, by the similarity of their embeddings.
 */
export const FAMILY_OPS = {
  dense: "encode",
  sparse: "encode",
  colbert: "encode",
  /** One graph, three heads: dense, sparse and multi-vector (BGE-M3). */
  bge_m3: "encode",
  reranker: "score",
  gliner: "extract",
  token_classification: "extract",
  zero_shot: "extract",
  /** GLiClass uni-encoder: every label in one prompt with the text, one logit per label. */
  gliclass: "extract",
  clip: "encode",
  detection: "extract",
  /** Open-vocabulary detection: text queries and an image (OWL-ViT, OWLv2). */
  zero_shot_detection: "extract",
  /** Static embeddings (model2vec, GloVe averages): a token-table lookup and mean pooling. */
  static: "encode",
} as const satisfies Record<string, FamilyOp>;

/** A model family. */
export type Family = keyof typeof FAMILY_OPS;

/** Every family, in the order of {@link FAMILY_OPS}. */
export const FAMILIES = Object.keys(FAMILY_OPS) as [Family, ...Family[]];

/**
 * True when this release runs `family` (a value read from a file, or reported by a worker of
 * another release, may name one it does not know).
 */
export function isFamily(family: string): family is Family {
  return Object.hasOwn(FAMILY_OPS, family);
}

/** What a model can produce. */
export const OUTPUT_KINDS = [
  "dense",
  "sparse",
  "multivector",
  "score",
  "entities",
  "relations",
  "classifications",
  "objects",
  "data",
] as const;
export type OutputKind = typeof OUTPUT_KINDS[number];

/**
 * How a dense encoder turns token vectors into one vector: the mean of the attended tokens, the
 * first token (`cls`), the element-wise maximum (`max`), the last attended token (`last_token`,
 * decoder embedding models), or none (the graph pools itself, or the family does not pool).
 */
export const POOLINGS = ["mean", "cls", "max", "last_token", "none"] as const;
export type Pooling = typeof POOLINGS[number];

/** Model ids look like `org/name` or `org/name:profile`; never a path, a URL or `..`. */
export const MODEL_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(\/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?$/;

/** True when `id` is a safe model/repo id (no path traversal, no URL, bounded length). */
export function isSafeModelId(id: string): boolean {
  return MODEL_ID_RE.test(id) && !id.includes("..");
}

const RepoPath = z.string().min(1).max(300).refine(
  (p) =>
    !p.startsWith("/") && !p.split("/").includes("..") && !p.includes("\\") && !p.includes(":"),
  "file paths are relative to the repository, without '..'",
);

/** One profile of a model: which outputs it enables and which options it sets. */
export interface ModelProfileConfig {
  is_default: boolean;
  output_types: OutputKind[];
  output_similarity: Record<string, string>;
  /** Options this profile sets (merged under the request's `options`). */
  options: Record<string, unknown>;
}

/** A profile as written in a catalog file (defaults not yet applied). */
export type ModelProfileConfigInput =
  & Omit<ModelProfileConfig, "output_similarity" | "options">
  & Partial<Pick<ModelProfileConfig, "output_similarity" | "options">>;

/** A validated model configuration (one catalog entry, defaults applied). */
export interface ModelConfig {
  /** Catalog id, e.g. `BAAI/bge-small-en-v1.5`. */
  id: string;
  family: Family;
  /** Where the weights are: a hub repository at a revision (see {@link isPinnedRevision}). */
  hub: { repo: string; revision: string; gated: boolean };
  /**
   * Files by role: `model` (ONNX graph), `model_data` (external weights), `tokenizer`
   * (tokenizer.json), `vision_model`, `gliner_config`, `added_tokens`, `config`...
   */
  files: Record<string, string>;
  /**
   * Files by role that replace `files` on one device, e.g. the int8 graph a hub repository
   * publishes for CPUs: `{ cpu: { model: "onnx/model_quantized.onnx" } }` (a worker with
   * SVC_FORCE_FP32 keeps `files`). Optional; profiles' own `model_file` still wins.
   */
  device_files?: Partial<Record<"cpu" | "cuda", Record<string, string>>>;
  inputs: ("text" | "image")[];
  outputs: OutputKind[];
  /** Dimension per output type (dense: H, sparse: vocab size, multivector: token dim). */
  dims: Record<string, number>;
  max_sequence_length: number;
  pooling: Pooling;
  normalize: boolean;
  /** Matryoshka sizes the model was trained for (informative; any N ≤ dims is accepted). */
  matryoshka_dims?: number[];
  /** Text prefixes chosen with `options.input_type` = `query` | `document`. */
  prompts: { query?: string; document?: string };
  /**
   * The prompt a request without `input_type` gets (encode, /v1/embeddings). Unset: no prompt,
   * the texts go in as they are. Set for models trained with a prefix on every input.
   */
  default_input_type?: "query" | "document";
  profiles: Record<string, ModelProfileConfig>;
  /** Max padded tokens (batch × longest) in one ONNX run. */
  batch_token_budget: number;
  /** Worker pool bundle that serves this model. */
  bundle: string;
  licence: string;
  /** False for entries that could not be exercised offline (configuration only). */
  verified_offline: boolean;
  /** Family-specific settings (score activation, label maps, ColBERT marker ids, thresholds...). */
  family_options: Record<string, unknown>;
  description: string;
  /**
   * Set on entries configured from a repository's own files (`SVC_MODELS`): where the model came
   * from and, for each setting, the value and the file (and field) it was read from.
   */
  detected?: DetectionRecord;
  /**
   * Set by a CPU worker, never read from a catalog file: the entry's `files` had a quantised
   * graph put in place of the float one (`device_files.cpu`, or the variant detection found).
   */
  int8?: Int8Plan;
}

/**
 * A CPU worker's plan for a quantised graph: run `graph` if the load probe finds it agrees with
 * `float_files` on this CPU, else those; or, with `skipped`, run the float files from the start.
 */
export interface Int8Plan {
  /** The quantised graph (repository path). */
  graph: string;
  /** The float graph's files by role (`model`, and `model_data` / `vision_model` when it has them). */
  float_files: Record<string, string>;
  /** Why the quantised graph is not even tried (its family has no load probe). */
  skipped?: string;
}

/** One setting of a detected entry: its value and where it came from (`file field`). */
export interface DetectedSetting {
  value: unknown;
  from: string;
}

/** What was read from a repository to configure an entry (see ModelConfig.detected). */
export interface DetectionRecord {
  /** A hub repository at a revision (through the weight store), or a directory read in place. */
  source: { kind: "hub"; repo: string; revision: string } | { kind: "directory" };
  /** Setting name → value and origin (family, pooling, normalize, dims, prompts, files...). */
  settings: Record<string, DetectedSetting>;
}

/** Fields of a catalog file that have defaults. */
type Defaulted =
  | "dims"
  | "pooling"
  | "normalize"
  | "prompts"
  | "profiles"
  | "batch_token_budget"
  | "bundle"
  | "licence"
  | "verified_offline"
  | "family_options"
  | "description";

/** A model configuration as written in a file (defaults not yet applied). */
export type ModelConfigInput =
  & Omit<ModelConfig, Defaulted | "hub" | "profiles">
  & Partial<Omit<Pick<ModelConfig, Defaulted>, "profiles">>
  & {
    hub: { repo: string; revision: string; gated?: boolean };
    profiles?: Record<string, ModelProfileConfigInput>;
  };

const ModelProfileConfigSchema = z.object({
  is_default: z.boolean(),
  output_types: z.array(z.enum(OUTPUT_KINDS)),
  output_similarity: z.record(z.string(), z.string()).default({}),
  options: z.record(z.string(), z.unknown()).default({}),
});

/** Schema of one catalog entry (parse with `parseModelConfig` for a readable error). */
export const ModelConfigSchema: z.ZodType<ModelConfig, ModelConfigInput> = z.object({
  id: z.string().refine(isSafeModelId, "model id must be 'org/name' without paths or URLs"),
  family: z.enum(FAMILIES),
  hub: z.object({
    repo: z.string().refine(isSafeModelId, "hub repo must be 'org/name'"),
    // Required: a commit hash pins the files (an upstream push never mixes versions, and the
    // local cache keeps each revision apart); a branch name only where no commit is known.
    revision: z.string({ error: "hub.revision is required (a commit hash, or a branch)" })
      .regex(/^[A-Za-z0-9_.-]{1,64}$/),
    gated: z.boolean().default(false),
  }),
  files: z.record(z.string(), RepoPath).refine((f) => "model" in f, "files.model is required"),
  device_files: z.object({
    cpu: z.record(z.string(), RepoPath).optional(),
    cuda: z.record(z.string(), RepoPath).optional(),
  }).strict().optional(),
  inputs: z.array(z.enum(["text", "image"])).min(1),
  outputs: z.array(z.enum(OUTPUT_KINDS)).min(1),
  dims: z.record(z.string(), z.number().int().positive()).default({}),
  max_sequence_length: z.number().int().positive().max(131072),
  pooling: z.enum(POOLINGS).default("mean"),
  normalize: z.boolean().default(true),
  matryoshka_dims: z.array(z.number().int().positive()).optional(),
  prompts: z.object({ query: z.string().optional(), document: z.string().optional() }).default({}),
  default_input_type: z.enum(["query", "document"]).optional(),
  profiles: z.record(z.string(), ModelProfileConfigSchema).default({}),
  batch_token_budget: z.number().int().positive().default(8192),
  bundle: z.string().regex(SLUG_RE, "bundle must be a lower-case slug").default("default"),
  licence: z.string().default("unknown"),
  verified_offline: z.boolean().default(false),
  family_options: z.record(z.string(), z.unknown()).default({}),
  description: z.string().default(""),
  detected: z.object({
    source: z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("hub"), repo: z.string(), revision: z.string() }),
      z.object({ kind: z.literal("directory") }),
    ]),
    settings: z.record(z.string(), z.object({ value: z.unknown(), from: z.string() })),
  }).optional(),
});

/** True when `revision` is a full commit hash (files can never change under it). */
export function isPinnedRevision(revision: string): boolean {
  return /^[0-9a-f]{40}$/.test(revision);
}

/** Validate a raw config; throws with a readable message naming the source. */
export function parseModelConfig(raw: unknown, source: string): ModelConfig {
  const r = ModelConfigSchema.safeParse(raw);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
    throw new Error(`invalid model config ${source}: ${issues.join("; ")}`);
  }
  return r.data;
}
