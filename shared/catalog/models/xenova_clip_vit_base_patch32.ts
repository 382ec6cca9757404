import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "Xenova/clip-vit-base-patch32",
  family: "clip",
  hub: { repo: "Xenova/clip-vit-base-patch32", revision: "main" },
  // `model` is the text tower; the image tower is a separate graph.
  files: {
    model: "onnx/text_model.onnx",
    vision_model: "onnx/vision_model.onnx",
    tokenizer: "tokenizer.json",
  },
  inputs: ["text", "image"],
  outputs: ["dense"],
  dims: { dense: 512 },
  max_sequence_length: 77,
  // The graphs emit projected text_embeds / image_embeds directly.
  pooling: "none",
  normalize: true,
  profiles: {
    default: { is_default: true, output_types: ["dense"], output_similarity: { dense: "cosine" } },
  },
  batch_token_budget: 8192,
  bundle: "default",
  licence: "see model card",
  verified_offline: false,
  family_options: {
    image_size: 224,
    resample: "bicubic",
    image_mean: [0.48145466, 0.4578275, 0.40821073],
    image_std: [0.26862954, 0.26130258, 0.27577711],
  },
  description: "CLIP ViT-B/32: text and images embedded into one shared 512-d space.",
} satisfies ModelConfigInput;
