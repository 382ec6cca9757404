import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "Xenova/owlv2-base-patch16-ensemble",
  family: "zero_shot_detection",
  hub: { repo: "Xenova/owlv2-base-patch16-ensemble", revision: "main" },
  // Same signature as OWL-ViT with 960×960 images (3600 boxes). File name as transformers.js
  // loads it (not seen in a listing here).
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json", config: "config.json" },
  inputs: ["image"],
  outputs: ["objects"],
  dims: {},
  max_sequence_length: 16,
  pooling: "none",
  normalize: false,
  profiles: {
    default: { is_default: true, output_types: ["objects"] },
  },
  batch_token_budget: 8192,
  bundle: "extract",
  licence: "Apache-2.0",
  verified_offline: false,
  family_options: {
    image_size: 960,
    // OWLv2 pads the image to a square (grey, bottom and right) before resizing: boxes are
    // relative to that square.
    pad_to_square: true,
    resample: "bilinear",
    image_mean: [0.48145466, 0.4578275, 0.40821073],
    image_std: [0.26862954, 0.26130258, 0.27577711],
    threshold: 0.1,
  },
  description: "OWLv2 B/16 (ensemble): open-vocabulary detection, 960-pixel input.",
} satisfies ModelConfigInput;
