import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "intfloat/multilingual-e5-small",
  family: "dense",
  hub: { repo: "intfloat/multilingual-e5-small", revision: "main" },
  // This repository keeps the tokenizer next to the ONNX graph, not at the root.
  files: { model: "onnx/model.onnx", tokenizer: "onnx/tokenizer.json" },
  inputs: ["text"],
  outputs: ["dense"],
  dims: { dense: 384 },
  max_sequence_length: 512,
  pooling: "mean",
  normalize: true,
  prompts: { query: "query: ", document: "passage: " },
  // Trained with a prefix on every input: a request that does not say gets `passage: `.
  default_input_type: "document",
  profiles: {
    default: { is_default: true, output_types: ["dense"], output_similarity: { dense: "cosine" } },
  },
  batch_token_budget: 8192,
  bundle: "default",
  licence: "MIT",
  verified_offline: false,
  description:
    "Small multilingual encoder (XLM-R vocabulary, 384-d) using query:/passage: prefixes.",
} satisfies ModelConfigInput;
