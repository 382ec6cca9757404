/** Closed-set object detectors (DETR, YOLOS): the classes they were trained on, with boxes. */
import { planDetection } from "../../service/extract/vision.ts";
import { imageSettings } from "../../catalog/detect/context.ts";
import { DetectionError, sayIt } from "../../catalog/detect/errors.ts";
import { detectionImages } from "./images.ts";
import { defineFamily } from "../info.ts";

/** The detection family. */
export const detectionInfo = defineFamily("detection", {
  lora: false,
  int8Probe: false,
  io: { inputs: ["image"], outputs: ["objects"] },
  oneImagePerItem: true,
  batchTokens: 4096,
  images: detectionImages,
  graphs: () => [{
    role: "model",
    feeds: ["pixel_values", "pixel_mask"],
    reads: [["logits"], ["pred_boxes"]],
  }],
  detect: {
    // Open-vocabulary detectors (OWL) are the zero_shot_detection family.
    architecture: (arch) =>
      arch.endsWith("ForObjectDetection") && !/^Owl(ViT|v2)ForObjectDetection$/.test(arch),
    tokenizer: false,
    preprocessor: true,
    configure: (ctx, _graphs, out) => {
      Object.assign(out.family_options!, imageSettings(ctx, detectionImages));
    },
    // A detector's "length" is its number of queries: the detections per image.
    maxLength: ({ rec, config }) => {
      const q = config?.num_queries ?? config?.num_detection_tokens;
      if (typeof q === "number") {
        return rec.set("max_sequence_length", q, "config.json num_queries (detections per image)");
      }
      throw new DetectionError(
        "config.json",
        "num_queries",
        "is missing (a detector's number of queries)",
        sayIt("max_sequence_length", "100"),
      );
    },
  },
  extract: { plan: planDetection },
});
