import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "sentence-transformers/all-MiniLM-L6-v2",
  family: "dense",
  hub: { repo: "sentence-transformers/all-MiniLM-L6-v2", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
  // The int8 graph the repository publishes runs on CPU workers once the load probe finds it
  // agrees with the float graph (docs/catalog.md); SVC_FORCE_FP32 keeps fp32.
  device_files: { cpu: { model: "onnx/model_quint8_avx2.onnx" } },
  inputs: ["text"],
  outputs: ["dense"],
  dims: { dense: 384 },
  max_sequence_length: 256,
  pooling: "mean",
  normalize: true,
  profiles: {
    default: { is_default: true, output_types: ["dense"], output_similarity: { dense: "cosine" } },
    // int8 exports published next to the fp32 graph: AVX2 runs on any recent x86 CPU,
    // the AVX-512 VNNI variant needs a CPU with that instruction set.
    quantized: {
      is_default: false,
      output_types: ["dense"],
      output_similarity: { dense: "cosine" },
      options: { model_file: "onnx/model_quint8_avx2.onnx" },
    },
    "quantized-avx512": {
      is_default: false,
      output_types: ["dense"],
      output_similarity: { dense: "cosine" },
      options: { model_file: "onnx/model_qint8_avx512_vnni.onnx" },
    },
  },
  batch_token_budget: 8192,
  bundle: "default",
  licence: "Apache-2.0",
  verified_offline: false,
  description: "Small, fast English sentence encoder (6 layers, 384-d); a common baseline.",
} satisfies ModelConfigInput;
