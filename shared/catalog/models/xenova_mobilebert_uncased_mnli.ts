import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "Xenova/mobilebert-uncased-mnli",
  family: "zero_shot",
  hub: { repo: "Xenova/mobilebert-uncased-mnli", revision: "main" },
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
  licence: "see model card",
  verified_offline: false,
  // Label order as on the model card; config.json (files.config) is authoritative and
  // should be preferred at load time when it names the classes differently.
  family_options: {
    id2label: ["entailment", "neutral", "contradiction"],
    hypothesis_template: "This example is {}.",
    multi_label: false,
  },
  description: "MobileBERT fine-tuned on MNLI, used for zero-shot text classification via NLI.",
} satisfies ModelConfigInput;
