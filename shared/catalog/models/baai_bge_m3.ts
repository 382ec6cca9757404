import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "BAAI/bge-m3",
  family: "bge_m3",
  // BAAI publishes no three-head ONNX graph; this community export of the same weights does
  // (model.onnx with its weights in model.onnx.data, outputs dense_vecs, sparse_vecs, colbert_vecs).
  hub: { repo: "aapot/bge-m3-onnx", revision: "main" },
  files: { model: "model.onnx", model_data: "model.onnx.data", tokenizer: "tokenizer.json" },
  inputs: ["text"],
  outputs: ["dense", "sparse", "multivector"],
  // XLM-RoBERTa-large: 1024-d dense and token vectors; sparse indices range over its 250,002 ids.
  dims: { dense: 1024, sparse: 250002, multivector: 1024 },
  max_sequence_length: 8192,
  pooling: "cls",
  normalize: true,
  profiles: {
    default: {
      is_default: true,
      output_types: ["dense", "sparse", "multivector"],
      output_similarity: { dense: "cosine", sparse: "dot", multivector: "maxsim" },
    },
  },
  // One 1024-d vector per token comes back from the ColBERT head: keep runs moderate.
  batch_token_budget: 4096,
  bundle: "default",
  licence: "MIT",
  verified_offline: false,
  description:
    "BGE-M3 multilingual retriever: dense, sparse (lexical weights) and multi-vector from one pass.",
} satisfies ModelConfigInput;
