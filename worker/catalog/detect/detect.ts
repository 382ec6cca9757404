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
 * and field and how to say it explicitly; never a guess.
 */
import {
  type DetectionRecord,
  type Family,
  FAMILY_OPS,
  type ModelConfig,
  type ModelConfigInput,
  type OutputKind,
  parseModelConfig,
  type Pooling,
} from "@svc/shared/catalog/schema";
import { nliHeads } from "../../families/classification.ts";
import { labelList } from "../../families/labels.ts";
import { FAMILY_INFOS } from "../../families/infos.ts";
import { DEFAULT_BATCH_TOKENS, type FamilyInfo } from "../../families/info.ts";
import { type GraphSignature, type GraphValue, readGraphSignature } from "@svc/onnx";
import type { EntryOptions } from "../model_entries.ts";
import { DetectionError, OVERRIDE_FILE, REPOSITORY, sayIt } from "./errors.ts";
import { imageOptions, PREPROCESSOR } from "./images.ts";
import { type GraphChoice, hasCheckpointWeights, singleGraph, splitGraphs } from "./onnx_files.ts";
import { mergeOverrides, Recorder } from "./record.ts";
import { isJsonObject, type Json, type RepoView } from "./repo_view.ts";
import { readSentenceTransformers, type StFacts } from "./sentence_transformers.ts";

/** What detection needs besides the repository. */
export interface DetectInput {
  /** The served id. */
  id: string;
  view: RepoView;
  /** True when reading a graph costs nothing (a local directory); false when it means a download. */
  graphsAreLocal: boolean;
  /** Settings given in the SVC_MODELS entry (`;key=value`). */
  entryOptions: EntryOptions;
  source: DetectionRecord["source"];
  /** What `optimum-cli export onnx --model …` should be given (hub id, or the directory). */
  exportFrom: string;
  /** The bundle a model of `family` is served in on this worker. */
  bundleFor(family: Family): string;
}

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

/** Model types whose position table starts after the padding index (RoBERTa's offset of 2). */
const OFFSET_POSITIONS = new Set([
  "roberta",
  "xlm-roberta",
  "xlm-roberta-xl",
  "camembert",
  "mpnet",
  "longformer",
  "data2vec-text",
  "roberta-prelayernorm",
]);

/** A tokenizer_config `model_max_length` at or above this is a "no limit" placeholder. */
const PLACEHOLDER_LENGTH = 1_000_000;

/** Detection state shared by the steps. */
interface Ctx {
  input: DetectInput;
  view: RepoView;
  rec: Recorder;
  config: Json | undefined;
  st: StFacts | undefined;
  gliner: Json | undefined;
  /** tokenizer_config.json and preprocessor_config.json, once the files are chosen. */
  tokenizerConfig?: Json;
  preprocessor?: unknown;
  /** Read once, on demand. */
  signature?: Promise<GraphSignature>;
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
  const graphs = chooseGraphs(ctx, family);
  // An override file may name a family this release lacks: parseModelConfig refuses it below.
  const info = FAMILY_INFOS[family] as FamilyInfo | undefined;
  const files: Record<string, string> = { ...graphs.files, ...supportFiles(ctx, family) };
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
  await configureFamily(ctx, family, graphs, out);
  out.max_sequence_length = given.max_sequence_length !== undefined
    ? rec.given<number>("max_sequence_length")!
    : maxLength(ctx, family, out);
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

function asObject(v: unknown, file: string): Json | undefined {
  if (v === undefined) return undefined;
  if (!isJsonObject(v)) {
    throw new DetectionError(file, undefined, "is not a JSON object", "Fix the file");
  }
  return v;
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

/** The architecture named by config.json, or undefined when it names none. */
function architecture(config: Json | undefined): string | undefined {
  const a = config?.architectures;
  return Array.isArray(a) && typeof a[0] === "string" ? a[0] : undefined;
}

/** The model's family: explicit, then GLiNER, sentence-transformers, config.json architectures. */
async function detectFamily(ctx: Ctx): Promise<Family> {
  const { rec, config, st } = ctx;
  const given = rec.given<Family>("family");
  if (given !== undefined) return given;
  if (ctx.gliner) return rec.set("family", "gliner", "gliner_config.json");
  if (st?.kind === "sparse") return rec.set("family", "sparse", st.kindFrom);
  const arch = architecture(config);
  if (st?.kind === "dense" && !(arch && /For(SequenceClassification|MaskedLM)$/.test(arch))) {
    return rec.set("family", "dense", `${st.kindFrom} (sentence-transformers pipeline)`);
  }
  if (!config) {
    throw new DetectionError(
      "config.json",
      undefined,
      "is missing, so nothing says what the model is (no gliner_config.json or modules.json " +
        "either)",
      sayIt("family", '"dense"'),
    );
  }
  if (!arch) {
    throw new DetectionError(
      "config.json",
      "architectures",
      `is missing (model_type ${JSON.stringify(config.model_type ?? null)})`,
      sayIt("family", '"dense"'),
    );
  }
  const from = `config.json architectures (${arch})`;
  if (arch === "CLIPModel") return rec.set("family", "clip", from);
  if (/^Owl(ViT|v2)ForObjectDetection$/.test(arch)) {
    return rec.set("family", "zero_shot_detection", from);
  }
  if (arch.endsWith("ForObjectDetection")) return rec.set("family", "detection", from);
  if (arch.endsWith("ForTokenClassification")) {
    return rec.set("family", "token_classification", from);
  }
  if (arch.endsWith("ForSequenceClassification")) return sequenceFamily(ctx, arch);
  if (arch.endsWith("ForMaskedLM")) return await maskedLmFamily(ctx, arch);
  if (/Model$/.test(arch) && !/For[A-Z]\w*Model$/.test(arch)) {
    return rec.set("family", "dense", `${from}: an encoder without a task head`);
  }
  throw new DetectionError(
    "config.json",
    "architectures",
    `names ${arch}, which is not an architecture this server recognises (it reads *Model ` +
      "encoders, *ForSequenceClassification, *ForTokenClassification, *ForMaskedLM, CLIPModel," +
      " *ForObjectDetection, and GLiNER exports)",
    sayIt("family", '"dense"'),
  );
}

/** One label: a cross-encoder; an entailment label: NLI zero-shot; anything else: ask. */
function sequenceFamily(ctx: Ctx, arch: string): Family {
  const labels = labelList(ctx.config?.id2label);
  const from = `config.json architectures (${arch}) and id2label`;
  if (!labels) {
    throw new DetectionError(
      "config.json",
      "id2label",
      `is missing or not a map of class ids to names (${arch} needs it)`,
      sayIt("family", '"reranker"'),
    );
  }
  if (labels.length === 1) return ctx.rec.set("family", "reranker", `${from}: one label`);
  if (labels.some((l) => l.toLowerCase().startsWith("entail"))) {
    return ctx.rec.set("family", "zero_shot", `${from}: an entailment label (NLI)`);
  }
  throw new DetectionError(
    "config.json",
    "id2label",
    `names ${labels.length} labels (${labels.slice(0, 5).join(", ")}), neither one relevance ` +
      "score (a cross-encoder) nor an entailment class (NLI)",
    sayIt("family", '"reranker"'),
  );
}

/** A masked-LM export is SPLADE when its graph outputs vocabulary logits per token. */
async function maskedLmFamily(ctx: Ctx, arch: string): Promise<Family> {
  const graph = singleGraph(ctx.view.files);
  if (!graph) throw noOnnx(ctx);
  const sig = await signatureOf(ctx, graph.files.model);
  const logits = sig.outputs.find((o) => o.name === "logits");
  const vocab = ctx.config?.vocab_size;
  if (logits && logits.dims.length === 3 && (vocab === undefined || logits.dims[2] === vocab)) {
    return ctx.rec.set(
      "family",
      "sparse",
      `config.json architectures (${arch}) and ${graph.files.model} output logits ` +
        `[${logits.dims.join(", ")}] (a SPLADE-style masked-LM export)`,
    );
  }
  throw new DetectionError(
    graph.files.model,
    "outputs",
    `are ${describe(sig.outputs)}: config.json names ${arch}, but the graph does not output ` +
      "vocabulary logits per token (logits [batch, seq, vocab_size]), so it is not a SPLADE " +
      "export (export the masked-LM head with --task fill-mask)",
    sayIt("family", '"dense"') + " if it is an embedding model",
  );
}

/** The graph files the family runs; no graph at all is the "export it" error. */
function chooseGraphs(ctx: Ctx, family: Family): GraphChoice {
  const model = givenFile(ctx, "model");
  if (model !== undefined) {
    const files: Record<string, string> = { model };
    const vision = givenFile(ctx, "vision_model");
    if (vision !== undefined) files.vision_model = vision;
    return { files, from: ctx.rec.overrides.origin.files };
  }
  if (family === "clip") {
    const split = splitGraphs(ctx.view.files);
    if (split) return split;
    if (singleGraph(ctx.view.files)) {
      throw new DetectionError(
        REPOSITORY,
        undefined,
        "holds one combined CLIP graph; the clip family runs the text and vision towers as two " +
          "graphs (onnx/text_model.onnx and onnx/vision_model.onnx, as transformers.js exports)",
        `Export the towers separately, or set {"files": {"model": …, "vision_model": …}} in ` +
          `${OVERRIDE_FILE}`,
      );
    }
    throw noOnnx(ctx);
  }
  return singleGraph(ctx.view.files) ?? (() => {
    throw noOnnx(ctx);
  })();
}

/** A file named explicitly (`files.<role>`): it must be one of the repository's. */
function givenFile(ctx: Ctx, role: string): string | undefined {
  const path = ctx.rec.givenIn<unknown>("files", role);
  if (path === undefined) return undefined;
  if (typeof path !== "string" || !ctx.view.files.has(path)) {
    throw new DetectionError(
      ctx.rec.overrides.origin.files,
      `files.${role}`,
      `names ${JSON.stringify(path)}, which is not a file of the repository`,
      "Name a file of the repository by its path inside it (e.g. onnx/model.onnx)",
    );
  }
  return path;
}

/** The repository has no ONNX weights: say so, and how to make them. */
function noOnnx(ctx: Ctx): DetectionError {
  const ckpt = hasCheckpointWeights(ctx.view.files);
  const what = ckpt ? `holds ${ckpt} (PyTorch weights) but no ONNX graph` : "holds no ONNX graph";
  const from = ctx.input.exportFrom;
  return new DetectionError(
    REPOSITORY,
    undefined,
    `${what} (looked for onnx/model.onnx and model.onnx): this server runs ONNX weights only`,
    `Export them with: optimum-cli export onnx --model ${from} DIR , then serve DIR ` +
      "(SVC_MODELS=ID=DIR)",
  );
}

/** The declared inputs and outputs of a repository graph (read once). */
function signatureOf(ctx: Ctx, path: string): Promise<GraphSignature> {
  ctx.signature ??= (async () => {
    const local = await ctx.view.local(path);
    try {
      return await readGraphSignature(local);
    } catch (err) {
      throw new DetectionError(
        path,
        undefined,
        `cannot be read as an ONNX model (${(err as Error).message})`,
        "Export it again",
      );
    }
  })();
  return ctx.signature;
}

/** The graph's signature when it is free to read (a directory), else undefined. */
function localSignature(ctx: Ctx, path: string): Promise<GraphSignature | undefined> {
  return ctx.input.graphsAreLocal ? signatureOf(ctx, path) : Promise.resolve(undefined);
}

function describe(values: readonly GraphValue[]): string {
  return values.map((v) => `${v.name} [${v.dims.join(", ")}]`).join(", ") || "none";
}

/** Tokenizer, configuration and family files by role. */
function supportFiles(ctx: Ctx, family: Family): Record<string, string> {
  const { view, rec } = ctx;
  const out: Record<string, string> = {};
  const has = (p: string) => view.files.has(p);
  if (family !== "detection") {
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
  if (family === "gliner") {
    out.gliner_config = "gliner_config.json";
    if (has("added_tokens.json")) out.added_tokens = "added_tokens.json";
  }
  if (has(PREPROCESSOR) && (family === "clip" || family.includes("detection"))) {
    out.preprocessor_config = PREPROCESSOR;
  }
  for (const [role, path] of Object.entries(out)) rec.set(`files.${role}`, path, path);
  return out;
}

/** Family-specific settings: pooling, dims, labels, activation, image settings. */
async function configureFamily(
  ctx: Ctx,
  family: Family,
  graphs: GraphChoice,
  out: ModelConfigInput,
): Promise<void> {
  const { rec, config } = ctx;
  const fo = out.family_options!;
  switch (family) {
    case "dense":
      await configureDense(ctx, graphs.files.model, out);
      return;
    case "sparse": {
      const given = rec.given<Record<string, number>>("dims");
      let vocab = given?.sparse ?? ctx.st?.dims?.value;
      let from = ctx.st?.dims?.from;
      if (vocab === undefined && typeof config?.vocab_size === "number") {
        vocab = config.vocab_size;
        from = "config.json vocab_size";
      }
      if (vocab === undefined) {
        const logits = (await signatureOf(ctx, graphs.files.model)).outputs
          .find((o) => o.name === "logits");
        if (typeof logits?.dims[2] === "number") {
          vocab = logits.dims[2];
          from = `${graphs.files.model} output logits`;
        }
      }
      if (vocab === undefined) {
        throw new DetectionError(
          "config.json",
          "vocab_size",
          "is missing, so the sparse vectors' dimension is unknown",
          sayIt("dims", '{"sparse": 30522}', false),
        );
      }
      if (!given) rec.set("dims", { sparse: vocab }, from!);
      out.dims = { sparse: vocab };
      return;
    }
    case "reranker": {
      const st = isJsonObject(config?.sentence_transformers) ? config.sentence_transformers : {};
      const act = st.activation_fn ?? config?.sbert_ce_default_activation_function;
      const sigmoid = typeof act === "string" && /Sigmoid/.test(act);
      fo.activation = rec.set(
        "family_options.activation",
        sigmoid ? "sigmoid" : "none",
        typeof act === "string"
          ? `config.json ${
            st.activation_fn
              ? "sentence_transformers.activation_fn"
              : "sbert_ce_default_activation_function"
          } (${act})`
          : "raw logit: config.json names no activation function",
      );
      return;
    }
    case "token_classification":
    case "zero_shot": {
      const given = rec.givenIn("family_options", "id2label");
      const labels = labelList(given ?? config?.id2label);
      if (!labels) {
        throw new DetectionError(
          "config.json",
          "id2label",
          "is missing or not a map of class ids to names",
          `Say it explicitly: put {"family_options": {"id2label": ["O", "B-PER", …]}} in ` +
            `${OVERRIDE_FILE}`,
        );
      }
      if (family === "zero_shot") {
        try {
          nliHeads(labels);
        } catch (err) {
          throw new DetectionError(
            "config.json",
            "id2label",
            (err as Error).message,
            sayIt("family", '"reranker"'),
          );
        }
      }
      fo.id2label = given ?? rec.set("family_options.id2label", labels, "config.json id2label");
      return;
    }
    case "gliner": {
      const mode = ctx.gliner?.span_mode;
      if (mode === "token_level") {
        out.outputs = rec.set(
          "outputs",
          ["entities", "relations", "data"] as OutputKind[],
          "gliner_config.json span_mode (token_level: a multitask model, relations too)",
        );
      } else {
        rec.set(
          "outputs",
          out.outputs,
          `gliner_config.json span_mode (${String(mode ?? "unset")})`,
        );
      }
      fo.threshold = 0.5;
      fo.flat_ner = true;
      return;
    }
    case "clip": {
      const proj = config?.projection_dim;
      const given = rec.given<Record<string, number>>("dims");
      if (given) out.dims = given;
      else if (typeof proj === "number") {
        out.dims = rec.set("dims", { dense: proj }, "config.json projection_dim");
      } else {
        const sig = await localSignature(ctx, graphs.files.model);
        const emb = sig?.outputs.find((o) => o.name === "text_embeds");
        if (typeof emb?.dims[1] !== "number") {
          throw new DetectionError(
            "config.json",
            "projection_dim",
            "is missing, so the embedding width is unknown",
            sayIt("dims", '{"dense": 512}', false),
          );
        }
        out.dims = rec.set(
          "dims",
          { dense: emb.dims[1] },
          `${graphs.files.model} output text_embeds`,
        );
      }
      out.normalize = rec.set(
        "normalize",
        true,
        "clip family (text and image vectors are L2-normalised)",
      );
      Object.assign(fo, imageSettings(ctx, family));
      return;
    }
    case "detection":
    case "zero_shot_detection":
      Object.assign(fo, imageSettings(ctx, family));
      return;
    default:
      return;
  }
}

/** Image settings from preprocessor_config.json, unless the override file gives them. */
function imageSettings(ctx: Ctx, family: Family): Record<string, unknown> {
  const given = ctx.rec.overrides.values.family_options;
  if (isJsonObject(given) && (given.image_mean !== undefined || given.image_size !== undefined)) {
    return {};
  }
  const opts = imageOptions(family, ctx.preprocessor);
  for (const [k, v] of Object.entries(opts)) {
    ctx.rec.set(`family_options.${k}`, v, `${PREPROCESSOR} ${k}`);
  }
  return opts;
}

/** Dense: pooling, normalisation, width; the graph says whether it pools itself. */
async function configureDense(ctx: Ctx, modelFile: string, out: ModelConfigInput): Promise<void> {
  const { rec, st, config } = ctx;
  const givenPooling = rec.given<Pooling>("pooling");
  const needGraph = givenPooling === undefined && st?.pooling === undefined;
  const sig = needGraph || st?.denseModule
    ? await signatureOf(ctx, modelFile)
    : await localSignature(ctx, modelFile);
  const pooled = sig?.outputs.find((o) =>
    (o.name === "sentence_embedding" || o.name === "embeddings") && o.dims.length === 2
  );
  const perToken = sig?.outputs.find((o) => o.name === "last_hidden_state");
  if (sig && !pooled && !perToken) {
    throw new DetectionError(
      modelFile,
      "outputs",
      `are ${describe(sig.outputs)}; a dense encoder outputs last_hidden_state [batch, seq, ` +
        "hidden] (or a pooled sentence_embedding [batch, dims])",
      "Export the model with --task feature-extraction",
    );
  }
  // A graph that outputs a pooled vector is used as it is: its own pooling wins.
  const graphPools = pooled !== undefined && perToken === undefined;
  if (st?.denseModule && !graphPools) {
    throw new DetectionError(
      "modules.json",
      undefined,
      `lists a Dense projection (${st.denseModule}) after pooling, which ${modelFile} does not ` +
        `contain (its outputs: ${describe(sig!.outputs)})`,
      "Export the whole sentence-transformers pipeline so the graph outputs sentence_embedding",
    );
  }
  if (givenPooling !== undefined) out.pooling = givenPooling;
  else if (graphPools) {
    out.pooling = rec.set(
      "pooling",
      "none",
      `${modelFile} output ${pooled!.name} (the graph pools)`,
    );
  } else if (st?.pooling) {
    out.pooling = rec.set("pooling", st.pooling.value, st.pooling.from);
  } else {
    throw new DetectionError(
      "1_Pooling/config.json",
      undefined,
      `is missing (no sentence-transformers modules.json), and ${modelFile} outputs token ` +
        "vectors, so nothing says how to pool them (CLS or mean)",
      sayIt("pooling", '"mean"'),
    );
  }
  const givenNormalize = rec.given<boolean>("normalize");
  if (givenNormalize !== undefined) out.normalize = givenNormalize;
  else if (st) out.normalize = rec.set("normalize", st.normalize.value, st.normalize.from);
  else {
    out.normalize = rec.set(
      "normalize",
      true,
      "default: no modules.json says otherwise (vectors are L2-normalised)",
    );
  }
  const given = rec.given<Record<string, number>>("dims");
  const graphWidth = (pooled ?? perToken)?.dims.at(-1);
  if (given) {
    out.dims = given;
  } else if (st?.dims) {
    if (typeof graphWidth === "number" && graphWidth !== st.dims.value && !st.denseModule) {
      throw new DetectionError(
        st.dims.from.split(" ")[0],
        "word_embedding_dimension",
        `is ${st.dims.value} but ${modelFile} outputs vectors of ${graphWidth}`,
        sayIt("dims", `{"dense": ${graphWidth}}`, false),
      );
    }
    out.dims = rec.set("dims", { dense: st.dims.value }, st.dims.from);
  } else if (typeof graphWidth === "number") {
    out.dims = rec.set(
      "dims",
      { dense: graphWidth },
      `${modelFile} output ${(pooled ?? perToken)!.name}`,
    );
  } else if (typeof config?.hidden_size === "number") {
    out.dims = rec.set("dims", { dense: config.hidden_size }, "config.json hidden_size");
  } else {
    throw new DetectionError(
      "config.json",
      "hidden_size",
      "is missing, so the embedding width is unknown",
      sayIt("dims", '{"dense": 768}', false),
    );
  }
  if (st?.prompts && rec.overrides.values.prompts === undefined) {
    out.prompts = rec.set("prompts", st.prompts.value, st.prompts.from);
  }
  if (st?.defaultInputType && rec.overrides.values.default_input_type === undefined) {
    out.default_input_type = rec.set(
      "default_input_type",
      st.defaultInputType.value,
      st.defaultInputType.from,
    );
  }
}

/** Similarity per output type of the default profile. */
function similarityOf(ctx: Ctx, out: ModelConfigInput): Record<string, string> {
  if (out.outputs.includes("sparse")) return { sparse: "dot" };
  if (!out.outputs.includes("dense")) return {};
  const sim = ctx.st?.similarity;
  if (sim) return { dense: ctx.rec.set("similarity", sim.value, sim.from) };
  return { dense: "cosine" };
}

/**
 * The longest input in tokens: the sentence-transformers `max_seq_length`, else the tokenizer's
 * `model_max_length` (unless it is a "no limit" placeholder), else the position table; never
 * above the position table when one is known (longer inputs would index past it).
 */
function maxLength(ctx: Ctx, family: Family, out: ModelConfigInput): number {
  const { rec, config, st } = ctx;
  if (family === "detection") {
    const q = config?.num_queries ?? config?.num_detection_tokens;
    if (typeof q === "number") {
      return rec.set("max_sequence_length", q, "config.json num_queries (detections per image)");
    }
    throw new DetectionError(
      "config.json",
      "num_queries",
      "is missing (a detector's number of queries)",
      sayIt("max_sequence_length", "100"),
    );
  }
  const positions = positionLimit(ctx);
  const tokCfg = ctx.tokenizerConfig;
  const tokMax = isJsonObject(tokCfg) && typeof tokCfg.model_max_length === "number" &&
      tokCfg.model_max_length > 0 && tokCfg.model_max_length < PLACEHOLDER_LENGTH
    ? tokCfg.model_max_length
    : undefined;
  const tokFile = out.files.tokenizer_config ?? "tokenizer_config.json";
  let value: number | undefined;
  let from = "";
  if (st?.maxSeqLength) {
    value = st.maxSeqLength.value;
    from = st.maxSeqLength.from;
  } else if (tokMax !== undefined) {
    value = tokMax;
    from = `${tokFile} model_max_length`;
  } else if (positions) {
    value = positions.value;
    from = positions.from;
  }
  if (value === undefined) {
    throw new DetectionError(
      "config.json",
      "max_position_embeddings",
      `is missing, and neither ${tokFile} model_max_length nor sentence_bert_config.json ` +
        "max_seq_length gives the longest input",
      sayIt("max_sequence_length", "512"),
    );
  }
  if (positions && positions.value < value) {
    value = positions.value;
    from = `${from}, capped by ${positions.from}`;
  }
  return rec.set("max_sequence_length", value, from);
}

/** The position table's size (less RoBERTa's padding offset), from config.json. */
function positionLimit(ctx: Ctx): { value: number; from: string } | undefined {
  const c = ctx.config;
  const text = isJsonObject(c?.text_config) ? c.text_config : undefined;
  const encoder = isJsonObject(ctx.gliner?.encoder_config) ? ctx.gliner.encoder_config : undefined;
  const [raw, where, owner] = typeof c?.max_position_embeddings === "number"
    ? [c.max_position_embeddings, "config.json max_position_embeddings", c]
    : typeof text?.max_position_embeddings === "number"
    ? [text.max_position_embeddings, "config.json text_config.max_position_embeddings", text]
    : typeof encoder?.max_position_embeddings === "number"
    ? [
      encoder.max_position_embeddings,
      "gliner_config.json encoder_config.max_position_embeddings",
      encoder,
    ]
    : [undefined, "", undefined];
  if (typeof raw !== "number") return undefined;
  const type = owner?.model_type;
  const pad = owner?.pad_token_id;
  if (typeof type === "string" && OFFSET_POSITIONS.has(type) && typeof pad === "number") {
    return { value: raw - pad - 1, from: `${where} (${raw}, less ${type}'s padding offset)` };
  }
  return { value: raw, from: where };
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
