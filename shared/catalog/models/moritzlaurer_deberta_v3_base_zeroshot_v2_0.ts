import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "MoritzLaurer/deberta-v3-base-zeroshot-v2.0",
  family: "zero_shot",
  hub: { repo: "MoritzLaurer/deberta-v3-base-zeroshot-v2.0", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json", config: "config.json" },
  inputs: ["text"],
  outputs: ["classifications"],
  dims: {},
  max_sequence_length: 512,
  pooling: "none",
  normalize: false,
  profiles: {
    default: { is_default: true, output_types: ["classifications"] },
  },
  batch_token_budget: 8192,
  bundle: "extract",
  licence: "MIT",
  verified_offline: false,
  // A 2-way head (entailment / not_entailment); config.json's id2label is read first at load.
  family_options: {
    id2label: ["entailment", "not_entailment"],
    hypothesis_template: "This text is about {}.",
    multi_label: false,
  },
  description:
    "DeBERTa-v3 base trained on NLI-style data for zero-shot classification (binary entailment head).",
} satisfies ModelConfigInput;
