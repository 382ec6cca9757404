import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "knowledgator/gliclass-small-v1.0",
  family: "gliclass",
  hub: { repo: "knowledgator/gliclass-small-v1.0", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json", config: "config.json" },
  inputs: ["text"],
  outputs: ["classifications"],
  dims: {},
  max_sequence_length: 1024,
  pooling: "none",
  normalize: false,
  profiles: {
    default: { is_default: true, output_types: ["classifications"] },
  },
  batch_token_budget: 8192,
  bundle: "extract",
  licence: "Apache-2.0",
  verified_offline: false,
  // config.json's prompt_first wins at load time (this model puts the text before the labels).
  family_options: { prompt_first: false, multi_label: true, threshold: 0.5 },
  description:
    "GLiClass uni-encoder (DeBERTa-v3 small): zero-shot classification of every label in one pass.",
} satisfies ModelConfigInput;
