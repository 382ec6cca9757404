import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "onnx-community/gliner-multitask-large-v0.5",
  family: "gliner",
  hub: { repo: "onnx-community/gliner-multitask-large-v0.5", revision: "main" },
  files: {
    model: "onnx/model.onnx",
    tokenizer: "tokenizer.json",
    gliner_config: "gliner_config.json",
    added_tokens: "added_tokens.json",
  },
  inputs: ["text"],
  outputs: ["entities", "relations", "data"],
  dims: {},
  max_sequence_length: 512,
  pooling: "none",
  normalize: false,
  profiles: {
    default: { is_default: true, output_types: ["entities", "relations", "data"] },
  },
  batch_token_budget: 4096,
  bundle: "extract",
  licence: "Apache-2.0",
  verified_offline: false,
  // A token-level export (no span inputs: logits [3, B, W, C]); the family reads the layout
  // from the graph's inputs. gliner_config.json (max_width, max_len) wins when present.
  family_options: {
    max_width: 12,
    max_words: 384,
    threshold: 0.5,
    relation_prompt: "Extract relationships between entities from the text:",
    // The entity types found first when a relations request names none (options.entity_labels).
    entity_labels: ["person", "organization", "location"],
  },
  description:
    "GLiNER multitask (large, knowledgator): entities of any type and relations between them.",
} satisfies ModelConfigInput;
