import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "BAAI/bge-small-en-v1.5",
  family: "dense",
  hub: { repo: "BAAI/bge-small-en-v1.5", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
  inputs: ["text"],
  outputs: ["dense"],
  dims: { dense: 384 },
  max_sequence_length: 512,
  pooling: "cls",
  normalize: true,
  // Only queries get an instruction; passages are encoded as they are.
  prompts: { query: "Represent this sentence for searching relevant passages: " },
  profiles: {
    default: { is_default: true, output_types: ["dense"], output_similarity: { dense: "cosine" } },
  },
  batch_token_budget: 8192,
  bundle: "default",
  licence: "MIT",
  verified_offline: false,
  description: "Small English retrieval encoder (384-d, CLS pooling) with a query instruction.",
} satisfies ModelConfigInput;
