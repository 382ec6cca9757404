/** Resource schemas: defaults, null tolerance, strict types, response and status shapes. */
import assert from "node:assert/strict";
import { parseRequest } from "@svc/shared/codec/parse";
import { NdArray } from "#shared/codec/ndarray.ts";
import {
  DenseVectorSchema,
  EncodeRequestSchema,
  MultiVectorSchema,
  SparseVectorSchema,
} from "@svc/shared/schemas/encode";
import { ExtractRequestSchema, ExtractResponseSchema } from "@svc/shared/schemas/extract";
import { ScoreRequestSchema, ScoreResponseSchema } from "@svc/shared/schemas/score";
import { ModelInfoSchema, ModelsListResponseSchema } from "@svc/shared/schemas/models";
import { ErrorBodySchema } from "#shared/schemas/error_body.ts";
import { StatusMessageSchema } from "@svc/shared/schemas/status";
import { TimingInfoSchema } from "@svc/shared/schemas/timing";
import {
  embeddingInputs,
  OpenAIEmbeddingsRequestSchema,
  OpenAIEmbeddingsResponseSchema,
} from "@svc/shared/schemas/openai";
import { ServiceError } from "@svc/shared/errors";
import { assertInvalid } from "./helpers.ts";

Deno.test("encode request: defaults for params, output_types and output_dtype", () => {
  const r = parseRequest(EncodeRequestSchema, { items: [{ text: "a" }] });
  // No output types asked: left absent so the worker can answer the model's default.
  assert.deepEqual(r.params, { output_dtype: "float32" });
  const e = parseRequest(EncodeRequestSchema, {
    items: [{ text: "a" }],
    params: { output_types: [] },
  });
  assert.deepEqual(e.params.output_types, undefined);
  const d = parseRequest(EncodeRequestSchema, {
    items: [{ text: "a" }],
    params: {
      output_types: ["sparse", "dense", "sparse"],
      output_dtype: "binary",
      instruction: "q: ",
      options: { lora_id: "org/adapter", profile: "fast" },
    },
  });
  assert.deepEqual(d.params, {
    output_types: ["sparse", "dense"],
    output_dtype: "binary",
    instruction: "q: ",
    options: { lora_id: "org/adapter", profile: "fast" },
  });
});

Deno.test("requests: null means absent for optional fields, never for required ones", () => {
  const r = parseRequest(EncodeRequestSchema, {
    items: [{ id: null, text: "a", images: null }],
    params: null,
  });
  assert.equal(r.items[0].id, undefined);
  assert.equal(r.params.output_dtype, "float32");
  const p = parseRequest(EncodeRequestSchema, {
    items: [{ text: "a" }],
    params: { output_dtype: null, output_types: null, instruction: null, options: null },
  });
  // Absent optional fields may be present as undefined keys; both encoders drop those.
  assert.deepEqual(JSON.parse(JSON.stringify(p.params)), { output_dtype: "float32" });
  assertInvalid(() => parseRequest(EncodeRequestSchema, { items: null }), /items: .*received null/);
  assertInvalid(
    () => parseRequest(ScoreRequestSchema, { query: null, items: [{ text: "a" }] }),
    /query:/,
  );
});

Deno.test("items: text or images; base64 and bytes for image data", () => {
  const bytes = Uint8Array.of(0xff, 0xd8, 0xff);
  const b64 = parseRequest(EncodeRequestSchema, {
    items: [{ images: [{ data: "/9j/", format: "jpeg" }] }],
  });
  assert.deepEqual(b64.items[0].images?.[0], { data: bytes, format: "jpeg" });
  const url = parseRequest(EncodeRequestSchema, {
    items: [{ images: [{ data: "data:image/jpeg;base64,/9j/" }] }],
  });
  assert.deepEqual(url.items[0].images?.[0].data, bytes);
  const raw = parseRequest(EncodeRequestSchema, { items: [{ images: [{ data: bytes }] }] });
  // Unpadded base64 is accepted; characters outside the alphabet or a broken length are not.
  const unpadded = parseRequest(EncodeRequestSchema, { items: [{ images: [{ data: "/9j" }] }] });
  assert.deepEqual(unpadded.items[0].images?.[0].data, Uint8Array.of(0xff, 0xd8));
  assert.deepEqual(raw.items[0].images?.[0].data, bytes);
  // Bare bytes, as the SIE TypeScript client sends `images: [bytes]`, stand for `{data}`.
  const bare = parseRequest(EncodeRequestSchema, { items: [{ images: [bytes] }] });
  assert.deepEqual(bare.items[0].images, [{ data: bytes }]);
  assertInvalid(
    () => parseRequest(EncodeRequestSchema, { items: [{ images: [new Uint8Array(0)] }] }),
    /image data is empty/,
  );
  assertInvalid(
    () => parseRequest(EncodeRequestSchema, { items: [{ images: [] }] }),
    /needs `text` or `images`/,
  );
  assertInvalid(
    () => parseRequest(EncodeRequestSchema, { items: [{ images: [{ data: "" }] }] }),
    /image data is empty/,
  );
  assertInvalid(
    () => parseRequest(EncodeRequestSchema, { items: [{ images: [{ data: "abcde" }] }] }),
    /not valid base64/,
  );
  const many = Array.from({ length: 65 }, () => ({ data: "AAAA" }));
  assertInvalid(
    () => parseRequest(EncodeRequestSchema, { items: [{ images: many }] }),
    /images: .*<=64/,
  );
  // An empty text is still text (the tokenizer handles it).
  assert.equal(parseRequest(EncodeRequestSchema, { items: [{ text: "" }] }).items[0].text, "");
});

Deno.test("score request: query and items required, top-level instruction/options", () => {
  const r = parseRequest(ScoreRequestSchema, {
    query: { id: "q", text: "what" },
    items: [{ id: "1", text: "x" }, { text: "y" }],
    instruction: "rank",
    options: { x: 1 },
  });
  assert.equal(r.query.id, "q");
  assert.equal(r.items.length, 2);
  assertInvalid(
    () => parseRequest(ScoreRequestSchema, { query: { text: "q" } }),
    /^items: required field is missing$/,
  );
  assertInvalid(
    () => parseRequest(ScoreRequestSchema, { query: { text: "q" }, items: [{ text: 1 }] }),
    /items\[0\]\.text/,
  );
});

Deno.test("extract request: params optional, labels and output_schema typed", () => {
  const r = parseRequest(ExtractRequestSchema, { items: [{ text: "Ada Lovelace" }] });
  assert.deepEqual(r.params, {});
  const p = parseRequest(ExtractRequestSchema, {
    items: [{ text: "Ada Lovelace" }],
    params: { labels: ["person"], output_schema: { type: "object" } },
  });
  assert.deepEqual(p.params.labels, ["person"]);
  assertInvalid(
    () =>
      parseRequest(ExtractRequestSchema, { items: [{ text: "a" }], params: { labels: "person" } }),
    /params\.labels/,
  );
  assertInvalid(
    () =>
      parseRequest(ExtractRequestSchema, {
        items: [{ text: "a" }],
        params: { output_schema: "x" },
      }),
    /params\.output_schema/,
  );
});

Deno.test("openai request: every input form, defaults and type errors", () => {
  const parse = (v: unknown) => parseRequest(OpenAIEmbeddingsRequestSchema, v);
  const s = parse({ model: "m", input: "hello" });
  assert.equal(s.encoding_format, "float");
  assert.deepEqual(embeddingInputs(s.input), { texts: ["hello"] });
  assert.deepEqual(embeddingInputs(parse({ model: "m", input: ["a", "b"] }).input), {
    texts: ["a", "b"],
  });
  assert.deepEqual(embeddingInputs(parse({ model: "m", input: [1, 2, 3] }).input), {
    tokenIds: [[1, 2, 3]],
  });
  assert.deepEqual(embeddingInputs(parse({ model: "m", input: [[1], [2, 3]] }).input), {
    tokenIds: [[1], [2, 3]],
  });
  const full = parse({
    model: "m",
    input: "x",
    encoding_format: "base64",
    dimensions: 64,
    user: "u",
  });
  assert.deepEqual(full, {
    model: "m",
    input: "x",
    encoding_format: "base64",
    dimensions: 64,
    user: "u",
  });
  assertInvalid(() => parse({ model: "m" }), /^input: required field is missing$/);
  assertInvalid(() => parse({ model: "m", input: [] }), /^input: expected a string/);
  assertInvalid(() => parse({ model: "m", input: ["a", 1] }), /^input: expected a string/);
  assertInvalid(() => parse({ model: "m", input: [1.5] }), /^input:/);
  assertInvalid(() => parse({ model: "m", input: [[1], []] }), /^input:/);
  assertInvalid(
    () => parse({ model: "m", input: "x", encoding_format: "hex" }),
    /encoding_format: Invalid option/,
  );
  assertInvalid(() => parse({ model: "m", input: "x", dimensions: 0 }), /dimensions:/);
  assertInvalid(
    () => parse({ model: "m", input: "x", dimensions: "8" }),
    /dimensions: .*expected number/,
  );
  assertInvalid(() => parse({ input: "x" }), /^model: required field is missing$/);
  assert.ok(
    OpenAIEmbeddingsResponseSchema.safeParse({
      object: "list",
      data: [{ object: "embedding", index: 0, embedding: Float32Array.of(1) }, {
        object: "embedding",
        index: 1,
        embedding: "AACAPw==",
      }],
      model: "m",
      usage: { prompt_tokens: 3, total_tokens: 3 },
    }).success,
  );
});

Deno.test("vector schemas: values must match dtype", () => {
  assert.ok(
    DenseVectorSchema.safeParse({ dims: 2, dtype: "float32", values: Float32Array.of(1, 2) })
      .success,
  );
  assert.ok(
    !DenseVectorSchema.safeParse({ dims: 2, dtype: "float16", values: Float32Array.of(1, 2) })
      .success,
  );
  assert.ok(!DenseVectorSchema.safeParse({ dims: 2, dtype: "float32", values: [1, 2] }).success);
  assert.ok(
    SparseVectorSchema.safeParse({
      dims: 9,
      dtype: "float32",
      indices: Int32Array.of(1),
      values: Float32Array.of(1),
    }).success,
  );
  assert.ok(
    !SparseVectorSchema.safeParse({
      dims: 9,
      dtype: "int8",
      indices: Int32Array.of(1),
      values: Int8Array.of(1),
    }).success,
  );
  const values = NdArray.matrix(new Float32Array(6), 2, 3);
  assert.ok(
    MultiVectorSchema.safeParse({ token_dims: 3, num_tokens: 2, dtype: "float32", values }).success,
  );
  assert.ok(
    MultiVectorSchema.safeParse({
      token_dims: 3,
      num_tokens: 2,
      dtype: "float32",
      values: structuredClone(values),
    }).success,
  );
  assert.ok(
    !MultiVectorSchema.safeParse({ token_dims: 3, num_tokens: 2, dtype: "float32", values: [[1]] })
      .success,
  );
  assert.throws(() => NdArray.matrix(new Float32Array(5), 2, 3), /needs 6 elements/);
  assert.throws(() => new NdArray(new Float32Array(2), [2], "<f2"), /does not match/);
});

Deno.test("response schemas: score, extract, timing, models, errors", () => {
  assert.ok(
    ScoreResponseSchema.safeParse({
      model: "m",
      query_id: null,
      scores: [{ item_id: "a", score: 0.9, rank: 0 }, { item_id: null, score: -1.5, rank: 1 }],
    }).success,
  );
  assert.ok(
    ExtractResponseSchema.safeParse({
      model: "m",
      items: [{
        id: "1",
        entities: [{ text: "Ada", label: "person", score: 0.98, start: 0, end: 3 }],
        relations: [{ head: "Ada", tail: "London", relation: "lived_in", score: 0.7 }],
        classifications: [{ label: "bio", score: 0.6 }],
        objects: [{ label: "cat", score: 0.9, bbox: [10, 20, 30, 40] }],
        data: { name: "Ada" },
      }],
    }).success,
  );
  assert.ok(
    !ExtractResponseSchema.safeParse({
      model: "m",
      items: [{ objects: [{ label: "cat", score: 0.9, bbox: [1.5, 2, 3, 4] }] }],
    }).success,
  );
  assert.ok(
    TimingInfoSchema.safeParse({
      total_ms: 1,
      queue_ms: 0,
      tokenization_ms: 0.1,
      inference_ms: 0.8,
      postprocessing_ms: null,
    }).success,
  );
  assert.ok(
    !TimingInfoSchema.safeParse({
      total_ms: 1,
      queue_ms: 0,
      tokenization_ms: 0.1,
      inference_ms: 0.8,
    }).success,
  );
  const model = {
    name: "BAAI/bge-m3",
    inputs: ["text"],
    outputs: ["dense", "sparse", "multivector"],
    dims: { dense: 1024, sparse: 250002, multivector: 1024 },
    loaded: false,
    max_sequence_length: 8192,
    profiles: {
      default: {
        is_default: true,
        output_types: ["dense"],
        output_similarity: { dense: "cosine" },
      },
    },
  };
  assert.ok(ModelsListResponseSchema.safeParse({ models: [model] }).success);
  assert.ok(
    ModelInfoSchema.safeParse({
      ...model,
      state: "failed",
      last_error: { code: "INFERENCE_ERROR", message: "x" },
    }).success,
  );
  assert.ok(!ModelInfoSchema.safeParse({ ...model, state: "sleeping" }).success);
  const err = new ServiceError("QUEUE_FULL", "busy").toBody();
  assert.ok(ErrorBodySchema.safeParse(err).success);
  assert.ok(!ErrorBodySchema.safeParse({ detail: { code: "NOPE", message: "x" } }).success);
});

Deno.test("status message: every field of the Events section", () => {
  const msg = {
    timestamp: 1732281600.25,
    name: "worker-1",
    gpu: "l4",
    gpu_count: 1,
    bundle: "default",
    machine_profile: "l4-spot",
    loaded_models: ["BAAI/bge-m3"],
    server: { version: "0.1.0", uptime_seconds: 12, user: "svc", working_dir: "/srv", pid: 42 },
    gpus: [{
      index: 0,
      device: "cuda:0",
      name: "NVIDIA L4",
      gpu_type: "l4",
      utilization_percent: 37.5,
      utilization_pct: 37.5,
      memory_used_bytes: 1 << 30,
      memory_total_bytes: 24 * 2 ** 30,
      memory_threshold_pct: 85,
      temperature_c: 51,
    }],
    models: [{
      name: "BAAI/bge-m3",
      state: "loaded",
      device: "cuda:0",
      memory_bytes: 2 ** 31,
      queue_depth: 1,
      queue_pending_items: 4,
      config: {
        family: "dense",
        hf_id: "BAAI/bge-m3",
        adapter: "bge_m3",
        inputs: ["text"],
        outputs: ["dense", "sparse", "multivector"],
        dims: { dense: 1024, sparse: 250002, multivector: 1024 },
      },
    }],
    counters: { requests: 3 },
    histograms: {},
  };
  assert.ok(StatusMessageSchema.safeParse(msg).success);
  const bad = { ...msg, models: [{ ...msg.models[0], state: "failed" }] };
  assert.ok(!StatusMessageSchema.safeParse(bad).success, "the status stream has four states only");
  const missing: Record<string, unknown> = { ...msg };
  delete missing.gpus;
  assert.ok(!StatusMessageSchema.safeParse(missing).success);
  // The fields the SIE clients type are required, inside `config` too.
  for (const key of ["name", "gpu_count", "bundle", "machine_profile"]) {
    const without: Record<string, unknown> = { ...msg };
    delete without[key];
    assert.ok(!StatusMessageSchema.safeParse(without).success, key);
  }
  const { hf_id: _, ...noHfId } = msg.models[0].config;
  const noConfigId = { ...msg, models: [{ ...msg.models[0], config: noHfId }] };
  assert.ok(!StatusMessageSchema.safeParse(noConfigId).success, "config.hf_id");
});
