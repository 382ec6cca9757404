import assert from "node:assert/strict";
import {
  BUILTIN_CATALOG,
  catalogById,
  defaultModelProfile,
  expandModelProfiles,
  resolveServedName,
} from "@svc/shared/catalog";
import { imageSpecOf } from "#worker/images/spec.ts";
import { BUNDLE_NAMES, bundlesOf, isBundleName, modelBundles } from "@svc/shared/catalog/bundles";
import {
  FAMILIES,
  isSafeModelId,
  type ModelConfig,
  ModelConfigSchema,
} from "@svc/shared/catalog/schema";

const MODELS_DIR = new URL("../../shared/catalog/models/", import.meta.url);
const byId = catalogById(BUILTIN_CATALOG);
const EMBEDDING_OUTPUTS = new Set(["dense", "sparse", "multivector"]);
const SIMILARITY: Record<string, string> = {
  dense: "cosine",
  sparse: "dot",
  multivector: "maxsim",
};
const EXTRACT_FAMILIES = new Set([
  "gliner",
  "token_classification",
  "zero_shot",
  "gliclass",
  "detection",
  "zero_shot_detection",
]);

/** The file-name form of an id: lower case, every run of other characters becomes `_`. */
function snake(id: string): string {
  return id.toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_|_$/g, "");
}

function isRepoRelativePath(p: string): boolean {
  return p.length > 0 && !p.startsWith("/") && !p.includes("\\") && !p.includes(":") &&
    !p.split("/").includes("..");
}

function get(id: string): ModelConfig {
  const c = byId.get(id);
  assert.ok(c, `missing ${id}`);
  return c;
}

Deno.test("every model file parses and is imported by mod.ts", async () => {
  const stems: string[] = [];
  for await (const e of Deno.readDir(MODELS_DIR)) {
    if (!e.isFile || !e.name.endsWith(".ts")) continue;
    stems.push(e.name.slice(0, -3));
    const mod = await import(new URL(e.name, MODELS_DIR).href);
    const r = ModelConfigSchema.safeParse(mod.default);
    assert.ok(r.success, `${e.name}: ${r.success ? "" : JSON.stringify(r.error.issues)}`);
    assert.equal(snake(r.data.id), e.name.slice(0, -3), `${e.name} is not named after its id`);
  }
  assert.deepEqual(stems.sort(), BUILTIN_CATALOG.map((c) => snake(c.id)).sort());
});

/** Catalog ids served from another repository's ONNX export (id → repository). */
const ONNX_EXPORTS: Record<string, string> = { "BAAI/bge-m3": "aapot/bge-m3-onnx" };

Deno.test("ids are unique and safe; hub repos are safe", () => {
  assert.equal(byId.size, BUILTIN_CATALOG.length);
  assert.throws(() => catalogById([...BUILTIN_CATALOG, BUILTIN_CATALOG[0]]), /duplicate/);
  for (const c of BUILTIN_CATALOG) {
    assert.ok(isSafeModelId(c.id), c.id);
    assert.ok(isSafeModelId(c.hub.repo), c.hub.repo);
    assert.ok(!c.id.includes(":"), `${c.id}: ':' is reserved for profiles`);
    // Each repository is served under its own id, except models whose authors publish no usable
    // ONNX graph: they keep the name clients know and point at a named export.
    assert.equal(
      c.hub.repo,
      ONNX_EXPORTS[c.id] ?? c.id,
      `${c.id}: the catalog serves each repository under its own id`,
    );
    assert.equal(c.hub.revision, "main");
  }
});

Deno.test("files: model present, relative paths, roles each family needs", () => {
  for (const c of BUILTIN_CATALOG) {
    assert.ok(c.files.model?.endsWith(".onnx"), `${c.id}: files.model`);
    for (const [role, p] of Object.entries(c.files)) {
      assert.ok(isRepoRelativePath(p), `${c.id}: files.${role} = ${p}`);
    }
    if (c.inputs.includes("text")) {
      assert.ok(c.files.tokenizer?.endsWith("tokenizer.json"), `${c.id}: files.tokenizer`);
    }
    if (c.family === "clip") assert.ok(c.files.vision_model, `${c.id}: files.vision_model`);
    if (c.family === "gliner") {
      assert.equal(c.files.gliner_config, "gliner_config.json");
      assert.equal(c.files.added_tokens, "added_tokens.json");
    }
    if (["token_classification", "zero_shot", "gliclass"].includes(c.family)) {
      assert.equal(c.files.config, "config.json");
    }
  }
  assert.equal(get("intfloat/multilingual-e5-small").files.tokenizer, "onnx/tokenizer.json");
  assert.equal(get("answerdotai/answerai-colbert-small-v1").files.model, "vespa_colbert.onnx");
  assert.deepEqual(get("Xenova/clip-vit-base-patch32").files, {
    model: "onnx/text_model.onnx",
    vision_model: "onnx/vision_model.onnx",
    tokenizer: "tokenizer.json",
  });
});

Deno.test("exactly one default profile; profiles agree with outputs", () => {
  for (const c of BUILTIN_CATALOG) {
    const defaults = Object.entries(c.profiles).filter(([, p]) => p.is_default);
    assert.equal(defaults.length, 1, `${c.id}: default profiles`);
    assert.equal(defaultModelProfile(c), "default", `${c.id}: default profile name`);
    for (const [name, p] of Object.entries(c.profiles)) {
      const where = `${c.id}:${name}`;
      assert.match(name, /^[a-z0-9][a-z0-9._-]{0,63}$/, where);
      assert.ok(p.output_types.length > 0, where);
      for (const t of p.output_types) assert.ok(c.outputs.includes(t), `${where}: ${t}`);
      for (const [t, sim] of Object.entries(p.output_similarity)) {
        assert.ok((p.output_types as string[]).includes(t), `${where}: similarity for ${t}`);
        assert.equal(sim, SIMILARITY[t], `${where}: similarity for ${t}`);
      }
      for (const t of p.output_types) {
        if (EMBEDDING_OUTPUTS.has(t)) assert.ok(p.output_similarity[t], `${where}: ${t}`);
      }
      const dimensions = p.options.dimensions;
      if (dimensions !== undefined) {
        assert.ok(Number.isInteger(dimensions), where);
        assert.ok((dimensions as number) < (c.dims.dense ?? 0), where);
        if (c.matryoshka_dims) assert.ok(c.matryoshka_dims.includes(dimensions as number), where);
      }
      const modelFile = p.options.model_file;
      if (modelFile !== undefined) {
        assert.equal(typeof modelFile, "string", where);
        assert.ok(isRepoRelativePath(modelFile as string), where);
        assert.ok((modelFile as string).endsWith(".onnx"), where);
        assert.notEqual(modelFile, c.files.model, where);
      }
    }
  }
});

Deno.test("dims are consistent with outputs", () => {
  for (const c of BUILTIN_CATALOG) {
    for (const o of c.outputs) {
      if (EMBEDDING_OUTPUTS.has(o)) assert.ok((c.dims[o] ?? 0) > 0, `${c.id}: dims.${o}`);
    }
    for (const k of Object.keys(c.dims)) {
      assert.ok(EMBEDDING_OUTPUTS.has(k) && (c.outputs as string[]).includes(k), `${c.id}: ${k}`);
    }
    if (c.matryoshka_dims) {
      assert.ok(c.outputs.includes("dense"), c.id);
      assert.equal(c.matryoshka_dims[0], c.dims.dense, c.id);
      for (let i = 1; i < c.matryoshka_dims.length; i++) {
        assert.ok(c.matryoshka_dims[i] < c.matryoshka_dims[i - 1], c.id);
      }
    }
  }
  assert.deepEqual(get("Qdrant/Splade_PP_en_v1").dims, { sparse: 30522 });
  assert.deepEqual(get("colbert-ir/colbertv2.0").dims, { multivector: 128 });
  assert.deepEqual(get("answerdotai/answerai-colbert-small-v1").dims, { multivector: 96 });
  assert.deepEqual(get("nomic-ai/nomic-embed-text-v1.5").matryoshka_dims, [768, 512, 256, 128, 64]);
  assert.deepEqual(get("Xenova/ms-marco-MiniLM-L-6-v2").dims, {});
  assert.deepEqual(get("BAAI/bge-m3").dims, { dense: 1024, sparse: 250002, multivector: 1024 });
});

Deno.test("family shapes: inputs, outputs, pooling and options", () => {
  for (const c of BUILTIN_CATALOG) {
    assert.equal(c.verified_offline, false, `${c.id}: configuration only`);
    assert.ok(c.licence.length > 0 && c.licence !== "unknown", `${c.id}: licence`);
    assert.ok(c.description.length > 0 && !c.description.includes("\n"), `${c.id}: description`);
    switch (c.family) {
      case "dense":
        assert.deepEqual(c.outputs, ["dense"], c.id);
        assert.ok(c.pooling === "mean" || c.pooling === "cls", c.id);
        assert.equal(c.normalize, true, c.id);
        break;
      case "sparse":
        assert.deepEqual(c.outputs, ["sparse"], c.id);
        assert.equal(c.normalize, false, c.id);
        break;
      case "colbert":
        assert.deepEqual(c.outputs, ["multivector"], c.id);
        assert.deepEqual(c.family_options, {
          query_marker_id: 1,
          document_marker_id: 2,
          query_length: 32,
          mask_token_id: 103,
          attend_to_mask_tokens: false,
        });
        break;
      case "bge_m3":
        assert.deepEqual(c.outputs, ["dense", "sparse", "multivector"], c.id);
        assert.equal(c.pooling, "cls", c.id);
        assert.ok(c.files.model_data, `${c.id}: external weights`);
        break;
      case "reranker":
        assert.deepEqual(c.outputs, ["score"], c.id);
        assert.ok(["none", "sigmoid"].includes(c.family_options.activation as string), c.id);
        break;
      case "gliner":
        // Multitask models add relations (a second, relation-prompted pass).
        assert.deepEqual(
          c.outputs,
          c.id.includes("multitask") ? ["entities", "relations", "data"] : ["entities", "data"],
          c.id,
        );
        break;
      case "token_classification":
        assert.deepEqual(c.outputs, ["entities"], c.id);
        break;
      case "zero_shot": {
        assert.deepEqual(c.outputs, ["classifications"], c.id);
        const labels = c.family_options.id2label as string[];
        assert.ok(labels.includes("entailment"), c.id);
        assert.ok(labels.includes("contradiction") || labels.includes("not_entailment"), c.id);
        assert.equal(String(c.family_options.hypothesis_template).split("{}").length, 2, c.id);
        break;
      }
      case "gliclass":
        assert.deepEqual(c.outputs, ["classifications"], c.id);
        assert.equal(typeof c.family_options.prompt_first, "boolean", c.id);
        break;
      case "clip":
        assert.deepEqual(c.inputs, ["text", "image"], c.id);
        assert.deepEqual(c.outputs, ["dense"], c.id);
        assert.equal(c.max_sequence_length, 77, c.id);
        break;
      case "detection":
      case "zero_shot_detection":
        assert.deepEqual(c.inputs, ["image"], c.id);
        assert.deepEqual(c.outputs, ["objects"], c.id);
        assert.ok(imageSpecOf(c), `${c.id}: image preprocessing from family_options`);
        break;
    }
  }
  assert.deepEqual(get("Xenova/bert-base-NER").family_options.id2label, [
    "O",
    "B-MISC",
    "I-MISC",
    "B-PER",
    "I-PER",
    "B-ORG",
    "I-ORG",
    "B-LOC",
    "I-LOC",
  ]);
  const nomic = get("nomic-ai/nomic-embed-text-v1.5");
  assert.deepEqual(nomic.prompts, { query: "search_query: ", document: "search_document: " });
  assert.equal(nomic.max_sequence_length, 2048);
  assert.deepEqual(get("intfloat/multilingual-e5-small").prompts, {
    query: "query: ",
    document: "passage: ",
  });
  assert.equal(get("BAAI/bge-small-en-v1.5").pooling, "cls");
  assert.equal(get("sentence-transformers/all-MiniLM-L6-v2").max_sequence_length, 256);
});

Deno.test("catalog covers every model family with at least 16 entries", () => {
  assert.ok(BUILTIN_CATALOG.length >= 16, `${BUILTIN_CATALOG.length} entries`);
  const families = new Set(BUILTIN_CATALOG.map((c) => c.family));
  // `static` (averaged word vectors) is served by the offline fixtures and glove/6B-100d only.
  for (const f of FAMILIES.filter((f) => f !== "static")) {
    assert.ok(families.has(f), `no ${f} model in the catalog`);
  }
});

Deno.test("bundles: valid names, extraction models in `extract`, map covers served names", () => {
  for (const c of BUILTIN_CATALOG) {
    assert.ok(isBundleName(c.bundle), `${c.id}: ${c.bundle}`);
    assert.equal(c.bundle, EXTRACT_FAMILIES.has(c.family) ? "extract" : "default", c.id);
  }
  const map = modelBundles(BUILTIN_CATALOG);
  const served = expandModelProfiles(BUILTIN_CATALOG);
  assert.deepEqual(Object.keys(map).sort(), [...served].sort());
  assert.equal(map["nomic-ai/nomic-embed-text-v1.5:matryoshka-256"], "default");
  assert.equal(map["onnx-community/gliner_small-v2.1"], "extract");
  assert.equal(map["Xenova/clip-vit-base-patch32"], "default");
  // Vision: detection models are extract models; the router knows them without any worker.
  assert.equal(map["Xenova/detr-resnet-50"], "extract");
  assert.equal(map["Xenova/owlvit-base-patch32"], "extract");
  assert.deepEqual(bundlesOf(BUILTIN_CATALOG), [...BUNDLE_NAMES].sort());
  const clash = { ...BUILTIN_CATALOG[0], bundle: "other" };
  assert.throws(() => modelBundles([BUILTIN_CATALOG[0], clash]), /two bundles/);
});

Deno.test("expandModelProfiles serves non-default profiles as id:profile", () => {
  const served = expandModelProfiles(BUILTIN_CATALOG);
  assert.equal(new Set(served).size, served.length);
  for (const c of BUILTIN_CATALOG) assert.ok(served.includes(c.id));
  assert.ok(served.includes("nomic-ai/nomic-embed-text-v1.5:matryoshka-256"));
  assert.ok(served.includes("Xenova/ms-marco-MiniLM-L-6-v2:quantized"));
  assert.ok(!served.includes("nomic-ai/nomic-embed-text-v1.5:default"));
  const extra = served.length - BUILTIN_CATALOG.length;
  const nonDefault = BUILTIN_CATALOG.reduce(
    (n, c) => n + Object.values(c.profiles).filter((p) => !p.is_default).length,
    0,
  );
  assert.equal(extra, nonDefault);
});

Deno.test("resolveServedName", () => {
  const nomic = "nomic-ai/nomic-embed-text-v1.5";
  const plain = resolveServedName(nomic, byId);
  assert.equal(plain?.config.id, nomic);
  assert.equal(plain?.modelProfile, "default");

  const prof = resolveServedName(`${nomic}:matryoshka-256`, byId);
  assert.equal(prof?.config.id, nomic);
  assert.equal(prof?.modelProfile, "matryoshka-256");
  assert.deepEqual(prof?.config.profiles[prof.modelProfile].options, { dimensions: 256 });

  // The default profile may also be named explicitly.
  assert.equal(resolveServedName(`${nomic}:default`, byId)?.modelProfile, "default");

  // Unknown profile, unknown model, empty parts, more than one colon.
  assert.equal(resolveServedName(`${nomic}:matryoshka-3`, byId), undefined);
  assert.equal(resolveServedName("Xenova/detr-resnet-50:quantized", byId), undefined);
  assert.equal(resolveServedName("nope/model", byId), undefined);
  assert.equal(resolveServedName("nope/model:default", byId), undefined);
  assert.equal(resolveServedName(`${nomic}:`, byId), undefined);
  assert.equal(resolveServedName(":default", byId), undefined);
  assert.equal(resolveServedName("", byId), undefined);
  assert.equal(resolveServedName(`${nomic}:matryoshka-256:quantized`, byId), undefined);
  // Prototype keys are not profiles.
  assert.equal(resolveServedName(`${nomic}:constructor`, byId), undefined);
  assert.equal(resolveServedName(`${nomic}:__proto__`, byId), undefined);

  // Percent-decoding is the caller's job.
  assert.equal(resolveServedName("nomic-ai%2Fnomic-embed-text-v1.5", byId), undefined);
  assert.equal(resolveServedName(`${nomic}%3Amatryoshka-256`, byId), undefined);

  // Ids are case-sensitive, as on the hub.
  assert.equal(resolveServedName("baai/bge-small-en-v1.5", byId), undefined);

  // Every served name resolves to its own model.
  for (const name of expandModelProfiles(BUILTIN_CATALOG)) {
    const r = resolveServedName(name, byId);
    assert.ok(r, name);
    assert.ok(name === r.config.id || name === `${r.config.id}:${r.modelProfile}`, name);
  }
});

Deno.test("catalog survives a JSON round trip (router and worker exchange it)", () => {
  assert.deepEqual(JSON.parse(JSON.stringify(BUILTIN_CATALOG)), BUILTIN_CATALOG);
});
