/** The model configuration format: one file per model, shared by router and worker. */
import { z } from "zod";
import { SLUG_RE } from "../fleet/protocol.ts";

/** Model families; one adapter module per family in `worker/families/`. */
export const FAMILIES = [
  "dense",
  "sparse",
  "colbert",
  "reranker",
  "gliner",
  "token_classification",
  "zero_shot",
  "clip",
  "detection",
  "static",
] as const;
export type Family = typeof FAMILIES[number];

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

export const ProfileConfigSchema = z.object({
  is_default: z.boolean(),
  output_types: z.array(z.enum(OUTPUT_KINDS)),
  output_similarity: z.record(z.string(), z.string()).default({}),
  /** Options this profile sets (merged under the request's `options`). */
  options: z.record(z.string(), z.unknown()).default({}),
});
export type ProfileConfig = z.infer<typeof ProfileConfigSchema>;

export const ModelConfigSchema = z.object({
  /** Catalog id, e.g. `BAAI/bge-small-en-v1.5`. */
  id: z.string().refine(isSafeModelId, "model id must be 'org/name' without paths or URLs"),
  family: z.enum(FAMILIES),
  /** Where the weights are: a hub repository at a revision. */
  hub: z.object({
    repo: z.string().refine(isSafeModelId, "hub repo must be 'org/name'"),
    revision: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/).default("main"),
    gated: z.boolean().default(false),
  }),
  /**
   * Files by role: `model` (ONNX graph), `model_data` (external weights), `tokenizer`
   * (tokenizer.json), `vision_model`, `gliner_config`, `added_tokens`, `config`...
   */
  files: z.record(z.string(), RepoPath).refine((f) => "model" in f, "files.model is required"),
  inputs: z.array(z.enum(["text", "image"])).min(1),
  outputs: z.array(z.enum(OUTPUT_KINDS)).min(1),
  /** Dimension per output type (dense: H, sparse: vocab size, multivector: token dim). */
  dims: z.record(z.string(), z.number().int().positive()).default({}),
  max_sequence_length: z.number().int().positive().max(131072),
  pooling: z.enum(["mean", "cls", "none"]).default("mean"),
  normalize: z.boolean().default(true),
  /** Matryoshka sizes the model was trained for (informative; any N ≤ dims is accepted). */
  matryoshka_dims: z.array(z.number().int().positive()).optional(),
  /** Text prefixes chosen with `options.input_type` = `query` | `document`. */
  prompts: z.object({ query: z.string().optional(), document: z.string().optional() }).default({}),
  profiles: z.record(z.string(), ProfileConfigSchema).default({}),
  /** Max padded tokens (batch × longest) in one ONNX run. */
  batch_token_budget: z.number().int().positive().default(8192),
  /** Worker pool bundle that serves this model. */
  bundle: z.string().regex(SLUG_RE, "bundle must be a lower-case slug").default("default"),
  licence: z.string().default("unknown"),
  /** False for entries that could not be exercised offline (configuration only). */
  verified_offline: z.boolean().default(false),
  /** Family-specific settings (score activation, label maps, ColBERT marker ids, thresholds...). */
  family_options: z.record(z.string(), z.unknown()).default({}),
  description: z.string().default(""),
});

/** A validated model configuration. */
export type ModelConfig = z.infer<typeof ModelConfigSchema>;
/** A model configuration as written in a file (defaults not yet applied). */
export type ModelConfigInput = z.input<typeof ModelConfigSchema>;

/** Validate a raw config; throws with a readable message naming the source. */
export function parseModelConfig(raw: unknown, source: string): ModelConfig {
  const r = ModelConfigSchema.safeParse(raw);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
    throw new Error(`invalid model config ${source}: ${issues.join("; ")}`);
  }
  return r.data;
}
