import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "Xenova/ms-marco-MiniLM-L-6-v2",
  family: "reranker",
  hub: { repo: "Xenova/ms-marco-MiniLM-L-6-v2", revision: "main" },
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
  family_options: { activation: "none" },
  description:
    "Cross-encoder reranker (6 layers) trained on MS MARCO passage ranking; raw logit scores.",
} satisfies ModelConfigInput;
