import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "Xenova/jina-embeddings-v2-small-en",
  family: "dense",
  hub: { repo: "Xenova/jina-embeddings-v2-small-en", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
  inputs: ["text"],
  outputs: ["dense"],
  dims: { dense: 512 },
  max_sequence_length: 8192,
  pooling: "mean",
  normalize: true,
  profiles: {
    default: { is_default: true, output_types: ["dense"], output_similarity: { dense: "cosine" } },
  },
  batch_token_budget: 8192,
  bundle: "default",
  licence: "Apache-2.0",
  verified_offline: false,
  description: "ONNX export of Jina's small English encoder: 512-d, long inputs up to 8192 tokens.",
} satisfies ModelConfigInput;
