import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "nomic-ai/nomic-embed-text-v1.5",
  family: "dense",
  hub: { repo: "nomic-ai/nomic-embed-text-v1.5", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
  // The int8 graph the repository publishes runs on CPU workers once the load probe finds it
  // agrees with the float graph (docs/catalog.md); SVC_FORCE_FP32 keeps fp32.
  device_files: { cpu: { model: "onnx/model_quantized.onnx" } },
  inputs: ["text"],
  outputs: ["dense"],
  dims: { dense: 768 },
  // Trained to 2,048 positions; the export has no rotary scaling, so longer inputs would run
  // positions the model never saw.
  max_sequence_length: 2048,
  pooling: "mean",
  normalize: true,
  matryoshka_dims: [768, 512, 256, 128, 64],
  // The model expects a task prefix on every input.
  prompts: { query: "search_query: ", document: "search_document: " },
  // Trained with a prefix on every input: a request that does not say gets the document one
  // (Nomic's own API defaults to search_document as well).
  default_input_type: "document",
  profiles: {
    default: { is_default: true, output_types: ["dense"], output_similarity: { dense: "cosine" } },
    "matryoshka-512": {
      is_default: false,
      output_types: ["dense"],
      output_similarity: { dense: "cosine" },
      options: { dimensions: 512 },
    },
    "matryoshka-256": {
      is_default: false,
      output_types: ["dense"],
      output_similarity: { dense: "cosine" },
      options: { dimensions: 256 },
    },
    quantized: {
      is_default: false,
      output_types: ["dense"],
      output_similarity: { dense: "cosine" },
      options: { model_file: "onnx/model_quantized.onnx" },
    },
  },
  batch_token_budget: 4096,
  bundle: "default",
  licence: "Apache-2.0",
  verified_offline: false,
  // Truncation recipe for this model: layer-norm over the pooled vector, slice, then L2.
  family_options: { matryoshka_layer_norm: true },
  description: "English encoder (2048 tokens), 768-d, trained for Matryoshka truncation.",
} satisfies ModelConfigInput;
