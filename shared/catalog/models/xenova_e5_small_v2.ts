import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "Xenova/e5-small-v2",
  family: "dense",
  hub: { repo: "Xenova/e5-small-v2", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
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
    "ONNX export of intfloat/e5-small-v2: small English encoder with query:/passage: prefixes.",
} satisfies ModelConfigInput;
