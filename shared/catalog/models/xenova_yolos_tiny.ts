import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "Xenova/yolos-tiny",
  family: "detection",
  hub: { repo: "Xenova/yolos-tiny", revision: "main" },
  // `pixel_values` only (no `pixel_mask`) → `logits` [B, 100, 92], `pred_boxes` [B, 100, 4];
  // config.json holds the COCO id2label map. File name as transformers.js loads it (not seen in a
  // listing here).
  files: { model: "onnx/model.onnx", config: "config.json" },
  inputs: ["image"],
  outputs: ["objects"],
  dims: {},
  // Image-only model: the number of detection tokens (detections per image).
  max_sequence_length: 100,
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
    shortest_edge: 512,
    longest_edge: 1333,
    image_mean: [0.485, 0.456, 0.406],
    image_std: [0.229, 0.224, 0.225],
    threshold: 0.9,
  },
  description: "YOLOS-tiny: a small ViT detector for the 80 COCO categories.",
} satisfies ModelConfigInput;
