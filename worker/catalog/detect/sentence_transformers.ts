/**
 * What a sentence-transformers repository says about serving it: `modules.json` (the pipeline:
 * Transformer, Pooling, Normalize, Dense; SparseEncoder's MLMTransformer and SpladePooling), the
 * Pooling module's `config.json` (CLS / mean / max / last-token pooling, output width),
 * `sentence_bert_config.json` (`max_seq_length`) and `config_sentence_transformers.json`
 * (`prompts`, `default_prompt_name`, `similarity_fn_name`, `model_type`).
 */
import type { Pooling } from "@svc/shared/catalog/schema";
import { DetectionError, sayIt } from "./errors.ts";
import { isJsonObject, type RepoView } from "./repo_view.ts";

/** One module of `modules.json`. */
interface StModule {
  path: string;
  type: string;
}

/** The sentence-transformers facts of a repository (absent fields: not said there). */
export interface StFacts {
  /** `dense` for a Pooling pipeline, `sparse` for SparseEncoder's SPLADE pooling. */
  kind: "dense" | "sparse";
  /** Where the kind was read. */
  kindFrom: string;
  pooling?: { value: Pooling; from: string };
  /** Whether a Normalize module ends the pipeline (modules.json says it either way). */
  normalize: { value: boolean; from: string };
  dims?: { value: number; from: string };
  /** A Dense projection after pooling: only an export whose graph pools includes it. */
  denseModule?: string;
  maxSeqLength?: { value: number; from: string };
  prompts?: { value: { query?: string; document?: string }; from: string };
  defaultInputType?: { value: "query" | "document"; from: string };
  similarity?: { value: string; from: string };
}

const MODULES = "modules.json";
const ST_CONFIG = "config_sentence_transformers.json";
const SBERT_CONFIG = "sentence_bert_config.json";

/** Prompt names read as the query prompt, then the document prompt (first present wins). */
const QUERY_PROMPTS = ["query", "search_query", "queries"];
const DOCUMENT_PROMPTS = ["document", "passage", "search_document", "corpus", "documents"];

/** Pooling modes of a Pooling config → ours (booleans, or `pooling_mode` text). */
const POOLING_MODES: Record<string, Pooling | undefined> = {
  pooling_mode_cls_token: "cls",
  pooling_mode_mean_tokens: "mean",
  pooling_mode_max_tokens: "max",
  pooling_mode_lasttoken: "last_token",
  pooling_mode_mean_sqrt_len_tokens: undefined,
  pooling_mode_weightedmean_tokens: undefined,
};
const POOLING_NAMES: Record<string, Pooling> = {
  cls: "cls",
  mean: "mean",
  max: "max",
  lasttoken: "last_token",
};

/** The modules of `modules.json`, or undefined when the repository has none. */
async function readModules(view: RepoView): Promise<StModule[] | undefined> {
  const raw = await view.json(MODULES);
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw)) {
    throw new DetectionError(MODULES, undefined, "is not a list of modules", "Fix the file");
  }
  return raw.map((m, i) => {
    if (!isJsonObject(m) || typeof m.type !== "string") {
      throw new DetectionError(MODULES, `[${i}].type`, "is missing", "Fix the file");
    }
    return { path: typeof m.path === "string" ? m.path : "", type: m.type };
  });
}

/** The short type of a module (`Pooling` of `sentence_transformers.models.Pooling`). */
function shortType(m: StModule): string {
  return m.type.slice(m.type.lastIndexOf(".") + 1);
}

/** The config file of a module at `path` (`1_Pooling/config.json`). */
function moduleConfig(m: StModule): string {
  return m.path === "" ? "config.json" : `${m.path.replace(/\/+$/, "")}/config.json`;
}

/**
 * Read the sentence-transformers files; undefined when the repository has no modules.json.
 * `poolingGiven`: the pooling was said explicitly, so the Pooling config only gives the width.
 */
export async function readSentenceTransformers(
  view: RepoView,
  poolingGiven = false,
): Promise<StFacts | undefined> {
  const modules = await readModules(view);
  const stConfig = await view.json(ST_CONFIG);
  if (modules === undefined) return undefined;
  const types = modules.map(shortType);
  const known = new Set([
    "Transformer",
    "Pooling",
    "Normalize",
    "Dense",
    "MLMTransformer",
    "SpladePooling",
  ]);
  const unknown = modules.filter((m) => !known.has(shortType(m)));
  if (unknown.length > 0) {
    throw new DetectionError(
      MODULES,
      undefined,
      `lists module ${unknown[0].type}, which this server cannot run from an ONNX export`,
      sayIt("family", '"dense"', true) + " (and the other settings the module would have given)",
    );
  }
  const normalize = types.includes("Normalize")
    ? { value: true, from: `${MODULES} (a Normalize module)` }
    : { value: false, from: `${MODULES} (no Normalize module)` };
  const facts: StFacts = { kind: "dense", kindFrom: MODULES, normalize };
  const splade = modules.find((m) => shortType(m) === "SpladePooling");
  const modelType = isJsonObject(stConfig) ? stConfig.model_type : undefined;
  if (splade || types.includes("MLMTransformer") || modelType === "SparseEncoder") {
    facts.kind = "sparse";
    facts.kindFrom = splade ? `${MODULES} (SpladePooling)` : `${ST_CONFIG} model_type`;
    if (splade) await readSplade(view, splade, facts);
  } else {
    const pooling = modules.find((m) => shortType(m) === "Pooling");
    if (pooling) await readPooling(view, pooling, facts, poolingGiven);
    const dense = modules.find((m) => shortType(m) === "Dense");
    if (dense) {
      facts.denseModule = dense.path || "Dense";
      const cfg = await view.json(moduleConfig(dense));
      const out = isJsonObject(cfg) ? cfg.out_features : undefined;
      if (typeof out === "number") {
        facts.dims = { value: out, from: `${moduleConfig(dense)} out_features` };
      }
    }
  }
  const sbert = await view.json(SBERT_CONFIG);
  if (isJsonObject(sbert) && typeof sbert.max_seq_length === "number" && sbert.max_seq_length > 0) {
    facts.maxSeqLength = { value: sbert.max_seq_length, from: `${SBERT_CONFIG} max_seq_length` };
  }
  if (isJsonObject(stConfig)) readStConfig(stConfig, facts);
  return facts;
}

async function readPooling(
  view: RepoView,
  m: StModule,
  facts: StFacts,
  poolingGiven: boolean,
): Promise<void> {
  const file = moduleConfig(m);
  const cfg = await view.json(file);
  if (poolingGiven) {
    if (isJsonObject(cfg) && typeof cfg.word_embedding_dimension === "number") {
      facts.dims = {
        value: cfg.word_embedding_dimension,
        from: `${file} word_embedding_dimension`,
      };
    }
    return;
  }
  if (!isJsonObject(cfg)) {
    throw new DetectionError(
      file,
      undefined,
      `is missing (${MODULES} lists a Pooling module at '${m.path}')`,
      sayIt("pooling", '"mean"'),
    );
  }
  if (typeof cfg.word_embedding_dimension === "number") {
    facts.dims = { value: cfg.word_embedding_dimension, from: `${file} word_embedding_dimension` };
  }
  if (cfg.include_prompt === false) {
    throw new DetectionError(
      file,
      "include_prompt",
      "is false: the prompt's tokens are left out of the pooling, which this server does not do",
      sayIt("pooling", '"mean"') + " if pooling the prompt too is acceptable",
    );
  }
  let modes: string[];
  let from: string;
  if (typeof cfg.pooling_mode === "string") {
    modes = [cfg.pooling_mode];
    from = `${file} pooling_mode`;
  } else {
    modes = Object.keys(POOLING_MODES).filter((k) => cfg[k] === true);
    from = `${file} ${modes.join(", ")}`;
  }
  if (modes.length !== 1) {
    throw new DetectionError(
      file,
      "pooling_mode_*",
      modes.length === 0 ? "names no pooling mode" : `combines ${modes.join(" and ")}`,
      sayIt("pooling", '"mean"'),
    );
  }
  const mode = modes[0];
  const value = Object.hasOwn(POOLING_MODES, mode) ? POOLING_MODES[mode] : POOLING_NAMES[mode];
  if (value === undefined) {
    throw new DetectionError(
      file,
      mode,
      "is a pooling this server does not run (it runs CLS, mean, max and last-token pooling)",
      sayIt("pooling", '"mean"'),
    );
  }
  facts.pooling = { value, from };
}

async function readSplade(view: RepoView, m: StModule, facts: StFacts): Promise<void> {
  const file = moduleConfig(m);
  const cfg = await view.json(file);
  if (!isJsonObject(cfg)) return;
  const strategy = cfg.pooling_strategy ?? "max";
  const activation = cfg.activation_function ?? "relu";
  if (strategy !== "max" || activation !== "relu") {
    throw new DetectionError(
      file,
      "pooling_strategy",
      `is ${String(strategy)} with ${String(activation)}: this server runs SPLADE as the ` +
        "maximum over tokens of log(1 + relu(logits))",
      "Serve it with a catalog descriptor if another pooling is acceptable",
    );
  }
  if (typeof cfg.word_embedding_dimension === "number") {
    facts.dims = { value: cfg.word_embedding_dimension, from: `${file} word_embedding_dimension` };
  }
}

/** Prompts, the default prompt and the similarity of config_sentence_transformers.json. */
function readStConfig(cfg: Record<string, unknown>, facts: StFacts): void {
  const prompts = isJsonObject(cfg.prompts) ? cfg.prompts : {};
  const pick = (names: string[]): [string, string] | undefined => {
    for (const n of names) {
      const p = prompts[n];
      if (typeof p === "string" && p !== "") return [n, p];
    }
    return undefined;
  };
  const query = pick(QUERY_PROMPTS);
  const document = pick(DOCUMENT_PROMPTS);
  if (query || document) {
    const value: { query?: string; document?: string } = {};
    if (query) value.query = query[1];
    if (document) value.document = document[1];
    const names = [query?.[0], document?.[0]].filter(Boolean).join(", ");
    facts.prompts = { value, from: `${ST_CONFIG} prompts (${names})` };
  }
  const def = cfg.default_prompt_name;
  if (typeof def === "string" && def !== "") {
    const from = `${ST_CONFIG} default_prompt_name`;
    if (def === query?.[0]) facts.defaultInputType = { value: "query", from };
    else if (def === document?.[0]) facts.defaultInputType = { value: "document", from };
    else if (typeof prompts[def] === "string" && prompts[def] !== "") {
      throw new DetectionError(
        ST_CONFIG,
        "default_prompt_name",
        `is '${def}', a prompt this server cannot put before every input`,
        sayIt("default_input_type", '"query"') + ', or set {"prompts": {…}} in the override file',
      );
    }
  }
  const sim = cfg.similarity_fn_name;
  if (typeof sim === "string") {
    facts.similarity = {
      value: sim === "dot" || sim === "dot_product" ? "dot" : sim,
      from: `${ST_CONFIG} similarity_fn_name`,
    };
  }
}
