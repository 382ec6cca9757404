import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "nomic-ai/nomic-embed-text-v1.5",
  family: "dense",
  hub: { repo: "nomic-ai/nomic-embed-text-v1.5" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
  // The int8 graph the repository publishes runs on CPU workers (SVC_FORCE_FP32 keeps fp32).
  device_files: { cpu: { model: "onnx/model_quantized.onnx" } },
  inputs: ["text"],
  outputs: ["dense"],
  dims: { dense: 768 },
  max_sequence_length: 8192,
  pooling: "mean",
  normalize: true,
  matryoshka_dims: [768, 512, 256, 128, 64],
  // The model expects a task prefix on every input.
  prompts: { query: "search_query: ", document: "search_document: " },
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
  description:
    "Long-context (8192 tokens) English encoder, 768-d, trained for Matryoshka truncation.",
} satisfies ModelConfigInput;
