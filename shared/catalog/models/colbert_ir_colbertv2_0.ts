import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "colbert-ir/colbertv2.0",
  family: "colbert",
  hub: { repo: "colbert-ir/colbertv2.0", revision: "main" },
  files: { model: "model.onnx", tokenizer: "tokenizer.json" },
  inputs: ["text"],
  outputs: ["multivector"],
  dims: { multivector: 128 },
  max_sequence_length: 512,
  // The export already projects and L2-normalises every token vector.
  pooling: "none",
  normalize: true,
  profiles: {
    default: {
      is_default: true,
      output_types: ["multivector"],
      output_similarity: { multivector: "maxsim" },
    },
  },
  batch_token_budget: 4096,
  bundle: "default",
  licence: "MIT",
  verified_offline: false,
  // [unused0] (id 1) marks queries, [unused1] (id 2) marks documents; queries are padded with
  // [MASK] (id 103) to 32 tokens.
  family_options: {
    query_marker_id: 1,
    document_marker_id: 2,
    query_length: 32,
    mask_token_id: 103,
    attend_to_mask_tokens: false,
  },
  description: "ColBERTv2 late-interaction retriever: one 128-d vector per token, MaxSim scoring.",
} satisfies ModelConfigInput;
