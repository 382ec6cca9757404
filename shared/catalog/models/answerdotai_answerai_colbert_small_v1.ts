import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "answerdotai/answerai-colbert-small-v1",
  family: "colbert",
  hub: { repo: "answerdotai/answerai-colbert-small-v1", revision: "main" },
  files: { model: "vespa_colbert.onnx", tokenizer: "tokenizer.json" },
  inputs: ["text"],
  outputs: ["multivector"],
  dims: { multivector: 96 },
  max_sequence_length: 512,
  pooling: "none",
  normalize: true,
  profiles: {
    default: {
      is_default: true,
      output_types: ["multivector"],
      output_similarity: { multivector: "maxsim" },
    },
  },
  batch_token_budget: 8192,
  bundle: "default",
  licence: "Apache-2.0",
  verified_offline: false,
  // Same BERT WordPiece vocabulary as ColBERTv2, so the same marker and mask ids.
  family_options: {
    query_marker_id: 1,
    document_marker_id: 2,
    query_length: 32,
    mask_token_id: 103,
    attend_to_mask_tokens: false,
  },
  description: "Small ColBERT-style retriever (96-d token vectors) in a Vespa ONNX export.",
} satisfies ModelConfigInput;
