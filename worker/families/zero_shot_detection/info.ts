/** Open-vocabulary detection (OWL-ViT, OWLv2): text queries and an image. */
import { planZeroShotDetection } from "../../service/extract/vision.ts";
import { imageSettings } from "../../catalog/detect/context.ts";
import { zeroShotDetectionImages } from "./images.ts";
import { defineFamily } from "../info.ts";

/** The zero_shot_detection family. */
export const zeroShotDetectionInfo = defineFamily("zero_shot_detection", {
  lora: false,
  int8Probe: false,
  io: { inputs: ["image"], outputs: ["objects"] },
  oneImagePerItem: true,
  images: zeroShotDetectionImages,
  graphs: () => [{
    role: "model",
    feeds: ["input_ids", "attention_mask", "pixel_values"],
    reads: [["logits"], ["pred_boxes"]],
  }],
  detect: {
    architecture: (arch) => /^Owl(ViT|v2)ForObjectDetection$/.test(arch),
    preprocessor: true,
    configure: (ctx, _graphs, out) => {
      Object.assign(out.family_options!, imageSettings(ctx, zeroShotDetectionImages));
    },
  },
  extract: { plan: planZeroShotDetection },
});
