import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "Xenova/detr-resnet-50",
  family: "detection",
  hub: { repo: "Xenova/detr-resnet-50", revision: "main" },
  // config.json holds the COCO id2label map (92 logits, the last is "no object").
  files: { model: "onnx/model.onnx", config: "config.json" },
  inputs: ["image"],
  outputs: ["objects"],
  dims: {},
  // Image-only model: there are no text tokens. The schema requires a value, so this is the
  // number of object queries (detections per image).
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
    shortest_edge: 800,
    longest_edge: 1333,
    image_mean: [0.485, 0.456, 0.406],
    image_std: [0.229, 0.224, 0.225],
    threshold: 0.9,
  },
  description: "DETR object detector (ResNet-50 backbone) for the 80 COCO categories, 100 queries.",
} satisfies ModelConfigInput;
