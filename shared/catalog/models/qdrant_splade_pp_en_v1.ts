import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "Qdrant/Splade_PP_en_v1",
  family: "sparse",
  hub: { repo: "Qdrant/Splade_PP_en_v1", revision: "main" },
  files: { model: "model.onnx", tokenizer: "tokenizer.json" },
  inputs: ["text"],
  outputs: ["sparse"],
  // Sparse dimension = BERT WordPiece vocabulary size.
  dims: { sparse: 30522 },
  max_sequence_length: 512,
  // Max-over-tokens of log(1 + relu(logits)) is done by the sparse family, not by pooling.
  pooling: "none",
  normalize: false,
  profiles: {
    default: { is_default: true, output_types: ["sparse"], output_similarity: { sparse: "dot" } },
  },
  // The graph returns [batch, tokens, 30522] float logits: keep batches smaller than for dense.
  batch_token_budget: 2048,
  bundle: "default",
  licence: "Apache-2.0",
  verified_offline: false,
  description: "SPLADE++ English learned-sparse encoder: term weights over the BERT vocabulary.",
} satisfies ModelConfigInput;
