import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "Xenova/bert-base-NER",
  family: "token_classification",
  hub: { repo: "Xenova/bert-base-NER", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json", config: "config.json" },
  inputs: ["text"],
  outputs: ["entities"],
  dims: {},
  max_sequence_length: 512,
  pooling: "none",
  normalize: false,
  profiles: {
    default: { is_default: true, output_types: ["entities"] },
  },
  batch_token_budget: 4096,
  bundle: "extract",
  licence: "MIT",
  verified_offline: false,
  // Index = class id of the logits (CoNLL-2003 BIO tags); config.json carries the same map.
  family_options: {
    id2label: ["O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"],
  },
  description: "Cased BERT-base tagger for person, organisation, location and misc entities (BIO).",
} satisfies ModelConfigInput;
