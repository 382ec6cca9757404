import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "Xenova/owlvit-base-patch32",
  family: "zero_shot_detection",
  hub: { repo: "Xenova/owlvit-base-patch32", revision: "main" },
  // One graph: `input_ids`/`attention_mask` (one row per query), `pixel_values` → `logits`
  // [B, 576, Q], `pred_boxes` [B, 576, 4]. File name as transformers.js loads it (not seen in a
  // listing here).
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json", config: "config.json" },
  inputs: ["image"],
  outputs: ["objects"],
  dims: {},
  // Tokens per text query (the processor pads queries to 16).
  max_sequence_length: 16,
  pooling: "none",
  normalize: false,
  profiles: {
    default: { is_default: true, output_types: ["objects"] },
  },
  batch_token_budget: 4096,
  bundle: "extract",
  licence: "Apache-2.0",
  verified_offline: false,
  family_options: {
    image_size: 768,
    resample: "bicubic",
    image_mean: [0.48145466, 0.4578275, 0.40821073],
    image_std: [0.26862954, 0.26130258, 0.27577711],
    threshold: 0.1,
  },
  description: "OWL-ViT B/32: open-vocabulary detection of the objects named in params.labels.",
} satisfies ModelConfigInput;
