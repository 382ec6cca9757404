/** Closed-set object detectors (DETR, YOLOS): the classes they were trained on, with boxes. */
import { planDetection } from "../../service/extract/vision.ts";
import { defineFamily } from "../info.ts";

/** The detection family. */
export const detectionInfo = defineFamily("detection", {
  lora: false,
  io: { inputs: ["image"], outputs: ["objects"] },
  batchTokens: 4096,
  graphs: () => [{
    role: "model",
    feeds: ["pixel_values", "pixel_mask"],
    reads: [["logits"], ["pred_boxes"]],
  }],
  extract: { plan: planDetection },
});
