/**
 * Fixture repositories laid out exactly as real exports are, built from the generated fixture
 * models: a sentence-transformers repository with an `onnx/` folder (modules.json, 1_Pooling,
 * Normalize, sentence_bert_config.json, config_sentence_transformers.json), optimum exports
 * (`model.onnx` at the root) of a cross-encoder and a token classifier, onnx-community's GLiNER
 * layout, transformers.js's CLIP layout (separate text and vision graphs), and broken ones (no
 * ONNX weights, an unknown architecture).
 */
import { dirname, join } from "node:path";
import { ensureFixtures } from "@svc/fixture-models";
import { copyDir } from "../helpers/files.ts";

/** Write a JSON file (creating its folder). */
export async function writeJson(path: string, value: unknown): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true });
  await Deno.writeTextFile(path, JSON.stringify(value, null, 2) + "\n");
}

/** The generated files of fixture `name` (`cache/fixture/<name>`). */
export async function fixtureDir(name: string): Promise<string> {
  return join(await ensureFixtures(), "cache", "fixture", name);
}

/** Options of {@link sentenceTransformersRepo}. */
export interface StRepoOptions {
  pooling: "mean" | "cls" | "max" | "last_token";
  /** A Normalize module after pooling (default true). */
  normalize?: boolean;
  /** sentence_bert_config.json max_seq_length (default 64, below the 128 positions). */
  maxSeqLength?: number;
  /** Keep the fixture's int8 twin (onnx/model_int8.onnx) next to the float graph. */
  keepInt8?: boolean;
}

const POOLING_FLAGS: Record<StRepoOptions["pooling"], string> = {
  mean: "pooling_mode_mean_tokens",
  cls: "pooling_mode_cls_token",
  max: "pooling_mode_max_tokens",
  last_token: "pooling_mode_lasttoken",
};

/**
 * fixture/dense as a sentence-transformers repository with an ONNX export (what
 * `SentenceTransformer(..., backend="onnx").save_pretrained` writes): the graph in `onnx/`, the
 * pipeline files at the root.
 */
export async function sentenceTransformersRepo(dest: string, o: StRepoOptions): Promise<string> {
  await copyDir(await fixtureDir("dense"), dest);
  if (!o.keepInt8) await Deno.remove(join(dest, "onnx/model_int8.onnx"));
  const modules = [
    { idx: 0, name: "0", path: "", type: "sentence_transformers.models.Transformer" },
    { idx: 1, name: "1", path: "1_Pooling", type: "sentence_transformers.models.Pooling" },
  ];
  if (o.normalize !== false) {
    modules.push({
      idx: 2,
      name: "2",
      path: "2_Normalize",
      type: "sentence_transformers.models.Normalize",
    });
  }
  await writeJson(join(dest, "modules.json"), modules);
  const flags = Object.fromEntries(Object.values(POOLING_FLAGS).map((f) => [f, false]));
  flags[POOLING_FLAGS[o.pooling]] = true;
  await writeJson(join(dest, "1_Pooling/config.json"), {
    word_embedding_dimension: 32,
    pooling_mode_cls_token: false,
    pooling_mode_mean_tokens: false,
    pooling_mode_max_tokens: false,
    pooling_mode_mean_sqrt_len_tokens: false,
    pooling_mode_weightedmean_tokens: false,
    pooling_mode_lasttoken: false,
    ...flags,
    include_prompt: true,
  });
  await writeJson(join(dest, "sentence_bert_config.json"), {
    max_seq_length: o.maxSeqLength ?? 64,
    do_lower_case: false,
  });
  await writeJson(join(dest, "config_sentence_transformers.json"), {
    __version__: { sentence_transformers: "3.4.1", transformers: "4.48.0", pytorch: "2.5.1" },
    prompts: { query: "query: ", document: "passage: " },
    default_prompt_name: null,
    similarity_fn_name: "cosine",
  });
  return dest;
}

/**
 * A sentence-transformers model as `optimum-cli export onnx` writes it: the graph at the root
 * (`model.onnx`) next to the configuration, tokenizer and sentence-transformers files.
 */
export async function sentenceTransformersExport(dest: string): Promise<string> {
  await sentenceTransformersRepo(dest, { pooling: "mean" });
  await Deno.rename(join(dest, "onnx/model.onnx"), join(dest, "model.onnx"));
  await Deno.remove(join(dest, "onnx"), { recursive: true });
  return dest;
}

/** An optimum export of `fixture` (`optimum-cli export onnx`: `model.onnx` at the root). */
export async function optimumExport(fixture: string, dest: string): Promise<string> {
  await copyDir(await fixtureDir(fixture), dest);
  await Deno.rename(join(dest, "onnx/model.onnx"), join(dest, "model.onnx"));
  await Deno.remove(join(dest, "onnx"), { recursive: true });
  return dest;
}

/** The GLiNER fixture as onnx-community publishes GLiNER (`onnx/model.onnx`, gliner_config.json). */
export async function glinerRepo(dest: string): Promise<string> {
  await copyDir(await fixtureDir("gliner"), dest);
  return dest;
}

/** The CLIP fixture as transformers.js publishes CLIP (text and vision graphs in `onnx/`). */
export async function clipRepo(dest: string): Promise<string> {
  await copyDir(await fixtureDir("clip"), dest);
  return dest;
}

/** A checkpoint without ONNX weights: config, tokenizer and PyTorch weights only. */
export async function checkpointRepo(dest: string): Promise<string> {
  await copyDir(await fixtureDir("dense"), dest);
  await Deno.remove(join(dest, "onnx"), { recursive: true });
  await Deno.writeFile(join(dest, "model.safetensors"), new Uint8Array(64));
  return dest;
}

/** fixture/dense whose config.json names an architecture nobody knows. */
export async function unknownArchitectureRepo(dest: string): Promise<string> {
  await copyDir(await fixtureDir("dense"), dest);
  const path = join(dest, "config.json");
  const config = JSON.parse(await Deno.readTextFile(path));
  config.architectures = ["FrobnicatorForTimeTravel"];
  config.model_type = "frobnicator";
  await writeJson(path, config);
  return dest;
}
