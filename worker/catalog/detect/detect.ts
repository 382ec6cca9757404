/**
 * Configure a model from its repository's own files, as the reference implementations read them
 * (sentence-transformers, transformers.js, fastembed, text-embeddings-inference, GLiNER): the
 * family from `config.json` `architectures` (or `gliner_config.json`, or sentence-transformers'
 * `modules.json`), pooling and normalisation from the sentence-transformers modules, lengths from
 * `sentence_bert_config.json`, `tokenizer_config.json` and `config.json`, prompts from
 * `config_sentence_transformers.json`, labels from `id2label`, image settings from
 * `preprocessor_config.json`, and the ONNX graph's declared outputs where they settle a question
 * (a masked-LM head or not, pooled or per-token outputs, the output width).
 *
 * The result is an ordinary catalog entry (so every family, the router's bundle map, /v1/models
 * and the status stream treat it like a built-in one) carrying `detected`: every setting with the
 * file and field it came from. What the files do not settle is one DetectionError naming the file
 * and field and how to say it explicitly; never a guess. The steps every family shares are here;
 * a family's own (settings, graphs, files) is its info's `detect` (`worker/families/<family>/`).
 */
import {
  type Family,
  FAMILY_OPS,
  type ModelConfig,
  type ModelConfigInput,
  parseModelConfig,
} from "@svc/shared/catalog/schema";
import { FAMILY_INFOS } from "../../families/infos.ts";
import { DEFAULT_BATCH_TOKENS, type FamilyInfo } from "../../families/info.ts";
import { asObject, type Ctx, type DetectInput, givenFile, noOnnx } from "./context.ts";
import { DetectionError, OVERRIDE_FILE } from "./errors.ts";
import { detectFamily } from "./family.ts";
import { PREPROCESSOR } from "./images.ts";
import { maxLength } from "./lengths.ts";
import { type GraphChoice, singleGraph } from "./onnx_files.ts";
import { mergeOverrides, Recorder } from "./record.ts";
import type { Json, RepoView } from "./repo_view.ts";
import { readSentenceTransformers } from "./sentence_transformers.ts";

export type { DetectInput } from "./context.ts";

/** Fields the override file may set (the catalog descriptor's, without id and hub). */
const OVERRIDABLE = new Set([
  "family",
  "pooling",
  "normalize",
  "max_sequence_length",
  "dims",
  "prompts",
  "default_input_type",
  "files",
  "device_files",
  "inputs",
  "outputs",
  "profiles",
  "batch_token_budget",
  "bundle",
  "licence",
  "description",
  "family_options",
  "matryoshka_dims",
]);

/**
 * The bundle of a detected model on a worker serving `workerBundle` (`all`: by family, the
 * extract families in the extract bundle).
 */
export function detectedBundle(family: Family, workerBundle: string): string {
  if (workerBundle !== "all") return workerBundle;
  return FAMILY_OPS[family] === "extract" ? "extract" : "default";
}

/** Configure `input.id` from its files; throws a DetectionError (or a weights error) when it cannot. */
export async function detectModel(input: DetectInput): Promise<ModelConfig> {
  const { view } = input;
  const fileOverrides = await readOverrideFile(view);
  const rec = new Recorder(mergeOverrides(fileOverrides, input.entryOptions));
  const given = rec.overrides.values;
  const ctx: Ctx = {
    input,
    view,
    rec,
    config: asObject(await view.json("config.json"), "config.json"),
    st: undefined,
    gliner: asObject(await view.json("gliner_config.json"), "gliner_config.json"),
  };
  ctx.st = await readSentenceTransformers(view, given.pooling !== undefined);
  const family = await detectFamily(ctx);
  // An override file may name a family this release lacks: parseModelConfig refuses it below.
  const info = FAMILY_INFOS[family] as FamilyInfo | undefined;
  const graphs = chooseGraphs(ctx, info);
  const files: Record<string, string> = { ...graphs.files, ...supportFiles(ctx, info) };
  rec.set("files.model", files.model, graphs.from);
  if (files.tokenizer_config) {
    ctx.tokenizerConfig = asObject(await view.json(files.tokenizer_config), files.tokenizer_config);
  }
  if (files.preprocessor_config) ctx.preprocessor = await view.json(files.preprocessor_config);
  const out: ModelConfigInput = {
    id: input.id,
    family,
    hub: input.source.kind === "hub"
      ? { repo: input.source.repo, revision: input.source.revision }
      : { repo: input.id, revision: "local" },
    files,
    ...(graphs.cpu ? { device_files: { cpu: graphs.cpu } } : {}),
    inputs: [...info?.io.inputs ?? ["text"]],
    outputs: [...info?.io.outputs ?? []],
    dims: {},
    max_sequence_length: 0,
    pooling: "none",
    normalize: false,
    prompts: {},
    batch_token_budget: info?.batchTokens ?? DEFAULT_BATCH_TOKENS,
    bundle: input.bundleFor(family),
    licence: "see model card",
    verified_offline: false,
    family_options: {},
    description: `Configured from its own files (${
      input.source.kind === "hub"
        ? `hub ${input.source.repo}@${input.source.revision}`
        : "a local directory"
    }) by SVC_MODELS.`,
  };
  // Family settings: pooling, dims, labels, activation, image settings.
  await info?.detect?.configure?.(ctx, graphs, out);
  const ownLength = info?.detect?.maxLength;
  out.max_sequence_length = given.max_sequence_length !== undefined
    ? rec.given<number>("max_sequence_length")!
    : ownLength
    ? ownLength(ctx)
    : maxLength(ctx, out);
  applyOverrides(rec, out);
  out.profiles = out.profiles ?? {
    default: {
      is_default: true,
      output_types: out.outputs,
      output_similarity: similarityOf(ctx, out),
    },
  };
  out.detected = { source: input.source, settings: rec.settings };
  return parseModelConfig(out, `${input.id} (detected from its files; SVC_MODELS)`);
}

/** The override file next to the weights, checked for fields it may not set. */
async function readOverrideFile(view: RepoView): Promise<Json | undefined> {
  const raw = asObject(await view.json(OVERRIDE_FILE), OVERRIDE_FILE);
  if (!raw) return undefined;
  for (const key of Object.keys(raw)) {
    if (!OVERRIDABLE.has(key)) {
      throw new DetectionError(
        OVERRIDE_FILE,
        key,
        key === "id" || key === "hub"
          ? "cannot be set here (the id and the source come from SVC_MODELS)"
          : "is not a field of the catalog descriptor that may be set here",
        `Fields it may set: ${[...OVERRIDABLE].join(", ")}`,
      );
    }
  }
  return raw;
}

/** The graph files the family runs; no graph at all is the "export it" error. */
function chooseGraphs(ctx: Ctx, info: FamilyInfo | undefined): GraphChoice {
  const model = givenFile(ctx, "model");
  if (model !== undefined) {
    const files: Record<string, string> = { model };
    const vision = givenFile(ctx, "vision_model");
    if (vision !== undefined) files.vision_model = vision;
    return { files, from: ctx.rec.overrides.origin.files };
  }
  if (info?.detect?.chooseGraphs) return info.detect.chooseGraphs(ctx);
  return singleGraph(ctx.view.files) ?? (() => {
    throw noOnnx(ctx);
  })();
}

/** Tokenizer, configuration and family files by role. */
function supportFiles(ctx: Ctx, info: FamilyInfo | undefined): Record<string, string> {
  const { view, rec } = ctx;
  const out: Record<string, string> = {};
  const has = (p: string) => view.files.has(p);
  if (info?.detect?.tokenizer !== false) {
    const tok = givenFile(ctx, "tokenizer") ??
      ["tokenizer.json", "onnx/tokenizer.json"].find(has);
    if (!tok) {
      throw new DetectionError(
        "tokenizer.json",
        undefined,
        "is missing: this server reads the fast tokenizer file (optimum-cli export onnx and " +
          "AutoTokenizer.save_pretrained write it)",
        `Add it, or name it: {"files": {"tokenizer": "path/tokenizer.json"}} in ${OVERRIDE_FILE}`,
      );
    }
    out.tokenizer = tok;
    const cfg = tok.replace(/tokenizer\.json$/, "tokenizer_config.json");
    if (has(cfg)) out.tokenizer_config = cfg;
  }
  if (has("config.json")) out.config = "config.json";
  Object.assign(out, info?.detect?.supportFiles?.(has));
  if (has(PREPROCESSOR) && info?.detect?.preprocessor) out.preprocessor_config = PREPROCESSOR;
  for (const [role, path] of Object.entries(out)) rec.set(`files.${role}`, path, path);
  return out;
}

/** Similarity per output type of the default profile. */
function similarityOf(ctx: Ctx, out: ModelConfigInput): Record<string, string> {
  if (out.outputs.includes("sparse")) return { sparse: "dot" };
  if (!out.outputs.includes("dense")) return {};
  const sim = ctx.st?.similarity;
  if (sim) return { dense: ctx.rec.set("similarity", sim.value, sim.from) };
  return { dense: "cosine" };
}

/** The explicit settings that detection does not consult, applied over what it found. */
function applyOverrides(rec: Recorder, out: ModelConfigInput): void {
  const values = rec.overrides.values;
  const target = out as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(values)) {
    if (key === "files" || key === "family_options") {
      target[key] = { ...(target[key] as Json), ...(value as Json) };
    } else if (!["family", "pooling", "normalize", "max_sequence_length"].includes(key)) {
      target[key] = value;
    }
    if (!rec.settings[key] && key !== "files" && key !== "family_options") {
      rec.set(key, value, rec.overrides.origin[key]);
    }
  }
}
