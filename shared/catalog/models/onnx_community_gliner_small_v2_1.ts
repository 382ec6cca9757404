import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "onnx-community/gliner_small-v2.1",
  family: "gliner",
  hub: { repo: "onnx-community/gliner_small-v2.1", revision: "main" },
  files: {
    model: "onnx/model.onnx",
    tokenizer: "tokenizer.json",
    gliner_config: "gliner_config.json",
    added_tokens: "added_tokens.json",
  },
  inputs: ["text"],
  outputs: ["entities", "data"],
  dims: {},
  max_sequence_length: 512,
  pooling: "none",
  normalize: false,
  profiles: {
    default: { is_default: true, output_types: ["entities", "data"] },
    quantized: {
      is_default: false,
      output_types: ["entities", "data"],
      options: { model_file: "onnx/model_quantized.onnx" },
    },
  },
  batch_token_budget: 4096,
  bundle: "extract",
  licence: "Apache-2.0",
  verified_offline: false,
  // Fallbacks; gliner_config.json (max_width, max_len) wins when it is present.
  family_options: { max_width: 12, max_words: 384, threshold: 0.5, flat_ner: true },
  description:
    "Zero-shot span NER (small): finds entities of any label names given at request time.",
} satisfies ModelConfigInput;
