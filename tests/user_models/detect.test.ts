/**
 * Detection on fixture repositories laid out as real exports: what each family's files say, that
 * each setting records the file and field it came from, and that what the files do not settle is
 * one DetectionError naming the file, the field and how to say it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { detectModel } from "#worker/catalog/detect/detect.ts";
import { DetectionError } from "#worker/catalog/detect/errors.ts";
import { directoryView } from "#worker/catalog/detect/repo_view.ts";
import { configForDevice } from "#worker/catalog/device_files.ts";
import type { EntryOptions } from "#worker/catalog/model_entries.ts";
import { loadFailure } from "#worker/registry/load_failure.ts";
import {
  checkpointRepo,
  clipRepo,
  fixtureDir,
  glinerRepo,
  optimumExport,
  sentenceTransformersRepo,
  unknownArchitectureRepo,
  writeJson,
} from "./repos.ts";
import { copyDir } from "../helpers/files.ts";

/** Detect the repository in `dir` as `acme/x`. */
async function detect(dir: string, options: EntryOptions = {}): Promise<ModelConfig> {
  return await detectModel({
    id: "acme/x",
    view: await directoryView(dir, "acme/x"),
    graphsAreLocal: true,
    entryOptions: options,
    source: { kind: "directory" },
    exportFrom: dir,
    bundleFor: () => "default",
  });
}

/** The DetectionError detecting `dir` throws. */
async function detectionError(dir: string, options: EntryOptions = {}): Promise<DetectionError> {
  try {
    await detect(dir, options);
  } catch (err) {
    assert.ok(err instanceof DetectionError, String(err));
    return err;
  }
  assert.fail("detection succeeded");
}

/** A fresh temporary directory for one test, removed afterwards. */
async function withTemp(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-detect-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The `from` of a recorded setting. */
function from(c: ModelConfig, key: string): string {
  const s = c.detected?.settings[key];
  assert.ok(s, `no ${key} in ${JSON.stringify(c.detected?.settings)}`);
  return s.from;
}

Deno.test("detect: a sentence-transformers ONNX repository (mean pooling, Normalize, prompts)", async () => {
  await withTemp(async (tmp) => {
    const c = await detect(await sentenceTransformersRepo(join(tmp, "st"), { pooling: "mean" }));
    assert.equal(c.family, "dense");
    assert.equal(c.pooling, "mean");
    assert.equal(c.normalize, true);
    assert.deepEqual(c.dims, { dense: 32 });
    assert.equal(c.max_sequence_length, 64);
    assert.deepEqual(c.prompts, { query: "query: ", document: "passage: " });
    assert.equal(c.files.model, "onnx/model.onnx");
    assert.equal(c.files.tokenizer, "tokenizer.json");
    assert.equal(c.device_files, undefined);
    assert.match(from(c, "family"), /modules\.json/);
    assert.equal(from(c, "pooling"), "1_Pooling/config.json pooling_mode_mean_tokens");
    assert.match(from(c, "normalize"), /modules\.json \(a Normalize module\)/);
    assert.equal(from(c, "dims"), "1_Pooling/config.json word_embedding_dimension");
    assert.equal(from(c, "max_sequence_length"), "sentence_bert_config.json max_seq_length");
    assert.match(from(c, "prompts"), /config_sentence_transformers\.json prompts/);
    assert.deepEqual(c.detected?.source, { kind: "directory" });
    assert.deepEqual(c.profiles.default.output_similarity, { dense: "cosine" });
  });
});

Deno.test("detect: CLS pooling without Normalize; max and last-token pooling", async () => {
  await withTemp(async (tmp) => {
    const cls = await detect(
      await sentenceTransformersRepo(join(tmp, "cls"), { pooling: "cls", normalize: false }),
    );
    assert.equal(cls.pooling, "cls");
    assert.equal(cls.normalize, false);
    assert.match(from(cls, "normalize"), /no Normalize module/);
    for (const pooling of ["max", "last_token"] as const) {
      const c = await detect(await sentenceTransformersRepo(join(tmp, pooling), { pooling }));
      assert.equal(c.pooling, pooling);
    }
  });
});

Deno.test("detect: the quantised variant runs on CPU, SVC_FORCE_FP32 keeps the float graph", async () => {
  await withTemp(async (tmp) => {
    const dir = join(tmp, "st");
    const c = await detect(
      await sentenceTransformersRepo(dir, { pooling: "mean", keepInt8: true }),
    );
    assert.equal(c.files.model, "onnx/model.onnx");
    assert.deepEqual(c.device_files, { cpu: { model: "onnx/model_int8.onnx" } });
    assert.match(from(c, "files.model"), /model_int8\.onnx on CPU \(SVC_FORCE_FP32=1 keeps/);
    assert.equal(configForDevice(c, "cpu", false).files.model, "onnx/model_int8.onnx");
    assert.equal(configForDevice(c, "cpu", true).files.model, "onnx/model.onnx");
    assert.equal(configForDevice(c, "cuda", false).files.model, "onnx/model.onnx");
  });
});

Deno.test("detect: an optimum cross-encoder export is a reranker", async () => {
  await withTemp(async (tmp) => {
    const c = await detect(await optimumExport("reranker", join(tmp, "rr")));
    assert.equal(c.family, "reranker");
    assert.equal(c.files.model, "model.onnx");
    assert.deepEqual(c.outputs, ["score"]);
    assert.equal(c.family_options.activation, "none");
    assert.match(from(c, "family"), /BertForSequenceClassification.*one label/);
    assert.equal(c.max_sequence_length, 128);
    assert.equal(from(c, "max_sequence_length"), "tokenizer_config.json model_max_length");
  });
});

Deno.test("detect: a token-classification export is BIO NER with its id2label", async () => {
  await withTemp(async (tmp) => {
    const c = await detect(await optimumExport("ner", join(tmp, "ner")));
    assert.equal(c.family, "token_classification");
    assert.equal(c.bundle, "default");
    assert.deepEqual((c.family_options.id2label as string[]).slice(0, 3), [
      "O",
      "B-MISC",
      "I-MISC",
    ]);
    assert.equal(from(c, "family_options.id2label"), "config.json id2label");
    assert.deepEqual(c.outputs, ["entities"]);
  });
});

Deno.test("detect: a GLiNER ONNX export", async () => {
  await withTemp(async (tmp) => {
    const c = await detect(await glinerRepo(join(tmp, "gliner")));
    assert.equal(c.family, "gliner");
    assert.equal(from(c, "family"), "gliner_config.json");
    assert.deepEqual(c.outputs, ["entities", "data"]);
    assert.equal(c.files.gliner_config, "gliner_config.json");
    assert.equal(c.files.added_tokens, "added_tokens.json");
  });
});

Deno.test("detect: a CLIP export with separate text and vision graphs", async () => {
  await withTemp(async (tmp) => {
    const c = await detect(await clipRepo(join(tmp, "clip")));
    assert.equal(c.family, "clip");
    assert.deepEqual(c.inputs, ["text", "image"]);
    assert.equal(c.files.model, "onnx/text_model.onnx");
    assert.equal(c.files.vision_model, "onnx/vision_model.onnx");
    assert.equal(from(c, "dims"), "config.json projection_dim");
    assert.equal(c.max_sequence_length, 77);
    assert.equal(c.family_options.resample, "bicubic");
    assert.equal(from(c, "family_options.image_mean"), "preprocessor_config.json image_mean");
  });
});

Deno.test("detect: a SPLADE-style masked-LM export is sparse; an NLI classifier is zero-shot", async () => {
  const sparse = await detect(await fixtureDir("sparse"));
  assert.equal(sparse.family, "sparse");
  assert.match(from(sparse, "family"), /BertForMaskedLM.*output logits \[batch, seq, 1290\]/);
  assert.deepEqual(sparse.dims, { sparse: 1290 });
  const nli = await detect(await fixtureDir("nli"));
  assert.equal(nli.family, "zero_shot");
  assert.match(from(nli, "family"), /entailment label/);
});

Deno.test("detect: a directory without ONNX weights names ONNX and the export command", async () => {
  await withTemp(async (tmp) => {
    const dir = await checkpointRepo(join(tmp, "ckpt"));
    const err = await detectionError(dir);
    assert.match(err.message, /model\.safetensors \(PyTorch weights\) but no ONNX graph/);
    assert.ok(err.message.includes(`optimum-cli export onnx --model ${dir} DIR`), err.message);
    // A failed load of it is permanent and says what it is.
    const failure = loadFailure("acme/x", err, 1, 0);
    assert.equal(failure.errorClass, "incompatible");
    assert.equal(failure.permanent, true);
  });
});

Deno.test("detect: an unknown architecture names the file, the field and how to say the family", async () => {
  await withTemp(async (tmp) => {
    const dir = await unknownArchitectureRepo(join(tmp, "odd"));
    const err = await detectionError(dir);
    assert.equal(err.file, "config.json");
    assert.equal(err.field, "architectures");
    assert.match(err.message, /FrobnicatorForTimeTravel/);
    assert.match(err.message, /";family=dense" to the model's SVC_MODELS entry/);
    assert.match(err.message, /\{"family": "dense"\} in svc_model\.json next to the weights/);
    // Said in the entry: served as a dense model (pooling still has to be said: no modules.json).
    const poolingErr = await detectionError(dir, { family: "dense" });
    assert.equal(poolingErr.file, "1_Pooling/config.json");
    const c = await detect(dir, { family: "dense", pooling: "cls" });
    assert.equal(c.family, "dense");
    assert.equal(c.pooling, "cls");
    assert.equal(from(c, "family"), "SVC_MODELS entry");
    assert.equal(from(c, "pooling"), "SVC_MODELS entry");
    // Or in the override file next to the weights (the descriptor's fields).
    await writeJson(join(dir, "svc_model.json"), { family: "dense", pooling: "mean" });
    const o = await detect(dir);
    assert.equal(o.pooling, "mean");
    assert.equal(from(o, "pooling"), "svc_model.json");
  });
});

Deno.test("detect: an encoder without sentence-transformers files needs its pooling said", async () => {
  const dir = await fixtureDir("dense");
  const err = await detectionError(dir);
  assert.equal(err.file, "1_Pooling/config.json");
  assert.match(err.message, /";pooling=mean"/);
  const c = await detect(dir, { pooling: "mean" });
  assert.equal(c.normalize, true);
  assert.match(from(c, "normalize"), /^default/);
  assert.equal(from(c, "dims"), "onnx/model.onnx output last_hidden_state");
  assert.equal(from(c, "max_sequence_length"), "tokenizer_config.json model_max_length");
});

Deno.test("detect: files that do not settle a question are errors, never guesses", async () => {
  await withTemp(async (tmp) => {
    // A masked-LM checkpoint exported without its head (last_hidden_state): not SPLADE.
    const plain = join(tmp, "plain-mlm");
    await copyDir(await fixtureDir("dense"), plain);
    const cfg = JSON.parse(await Deno.readTextFile(join(plain, "config.json")));
    await writeJson(join(plain, "config.json"), { ...cfg, architectures: ["BertForMaskedLM"] });
    const mlm = await detectionError(plain);
    assert.equal(mlm.file, "onnx/model.onnx");
    assert.match(mlm.message, /not a SPLADE export/);
    // A classifier that is neither a cross-encoder nor NLI.
    const sentiment = join(tmp, "sentiment");
    await copyDir(await fixtureDir("nli"), sentiment);
    const nli = JSON.parse(await Deno.readTextFile(join(sentiment, "config.json")));
    nli.id2label = { "0": "negative", "1": "neutral", "2": "positive" };
    await writeJson(join(sentiment, "config.json"), nli);
    const cls = await detectionError(sentiment);
    assert.equal(cls.field, "id2label");
    assert.match(cls.message, /negative, neutral, positive/);
    // A field the override file may not set.
    const bad = await sentenceTransformersRepo(join(tmp, "bad"), { pooling: "mean" });
    await writeJson(join(bad, "svc_model.json"), { hub: { repo: "x/y" } });
    const over = await detectionError(bad);
    assert.equal(over.file, "svc_model.json");
    assert.equal(over.field, "hub");
    // A file named explicitly must be one of the repository's (never a path out of it).
    await writeJson(join(bad, "svc_model.json"), { files: { model: "../../etc/passwd" } });
    const outside = await detectionError(bad);
    assert.equal(outside.field, "files.model");
    assert.match(outside.message, /not a file of the repository/);
    await writeJson(join(bad, "svc_model.json"), { files: { model: "onnx/model.onnx" } });
    assert.equal(from(await detect(bad), "files.model"), "svc_model.json");
    // A pooling this server does not run.
    await Deno.remove(join(bad, "svc_model.json"));
    const pool = JSON.parse(await Deno.readTextFile(join(bad, "1_Pooling/config.json")));
    await writeJson(join(bad, "1_Pooling/config.json"), {
      ...pool,
      pooling_mode_mean_tokens: false,
      pooling_mode_weightedmean_tokens: true,
    });
    const weighted = await detectionError(bad);
    assert.equal(weighted.file, "1_Pooling/config.json");
    assert.equal(weighted.field, "pooling_mode_weightedmean_tokens");
  });
});

Deno.test("detect: a placeholder model_max_length falls back to the position table", async () => {
  await withTemp(async (tmp) => {
    const dir = await optimumExport("reranker", join(tmp, "rr"));
    const tokPath = join(dir, "tokenizer_config.json");
    const tok = JSON.parse(await Deno.readTextFile(tokPath));
    await writeJson(tokPath, { ...tok, model_max_length: 1e30 });
    const c = await detect(dir);
    assert.equal(c.max_sequence_length, 128);
    assert.equal(from(c, "max_sequence_length"), "config.json max_position_embeddings");
    // An explicit length wins, and a longer one than the positions is capped by them.
    assert.equal((await detect(dir, { max_sequence_length: 100 })).max_sequence_length, 100);
    const sbert = await sentenceTransformersRepo(join(tmp, "long"), {
      pooling: "mean",
      maxSeqLength: 4096,
    });
    const capped = await detect(sbert);
    assert.equal(capped.max_sequence_length, 128);
    assert.match(from(capped, "max_sequence_length"), /capped by config\.json/);
  });
});
