import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "mixedbread-ai/mxbai-rerank-xsmall-v1",
  family: "reranker",
  hub: { repo: "mixedbread-ai/mxbai-rerank-xsmall-v1", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
  // The int8 graph the repository publishes runs on CPU workers once the load probe finds it
  // agrees with the float graph (docs/catalog.md); SVC_FORCE_FP32 keeps fp32.
  device_files: { cpu: { model: "onnx/model_quantized.onnx" } },
  inputs: ["text"],
  outputs: ["score"],
  dims: {},
  max_sequence_length: 512,
  pooling: "none",
  normalize: false,
  profiles: {
    default: { is_default: true, output_types: ["score"] },
    quantized: {
      is_default: false,
      output_types: ["score"],
      options: { model_file: "onnx/model_quantized.onnx" },
    },
  },
  batch_token_budget: 8192,
  bundle: "default",
  licence: "Apache-2.0",
  verified_offline: false,
  family_options: { activation: "sigmoid" },
  description: "Extra-small DeBERTa-v3 cross-encoder reranker with 0..1 scores.",
} satisfies ModelConfigInput;
