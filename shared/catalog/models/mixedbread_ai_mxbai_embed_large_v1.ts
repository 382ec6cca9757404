import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "mixedbread-ai/mxbai-embed-large-v1",
  family: "dense",
  hub: { repo: "mixedbread-ai/mxbai-embed-large-v1", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
  // The int8 graph the repository publishes runs on CPU workers once the load probe finds it
  // agrees with the float graph (docs/catalog.md); SVC_FORCE_FP32 keeps fp32.
  device_files: { cpu: { model: "onnx/model_quantized.onnx" } },
  inputs: ["text"],
  outputs: ["dense"],
  dims: { dense: 1024 },
  max_sequence_length: 512,
  pooling: "cls",
  normalize: true,
  // Retrieval instruction for queries as given on the model card.
  prompts: { query: "Represent this sentence for searching relevant passages: " },
  profiles: {
    default: { is_default: true, output_types: ["dense"], output_similarity: { dense: "cosine" } },
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
  description: "Large English encoder (24 layers, 1024-d, CLS pooling) with a query instruction.",
} satisfies ModelConfigInput;
