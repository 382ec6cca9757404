/** CLIP: a text tower and a vision tower, two graphs into one embedding space. */
import { clipGraphs, configureClip } from "./detect.ts";
import { clipImages } from "./images.ts";
import { defineFamily } from "../info.ts";

/** The clip family. */
export const clipInfo = defineFamily("clip", {
  // Two graphs: a LoRA adapter patches one text encoder.
  lora: false,
  int8Probe: false,
  io: { inputs: ["text", "image"], outputs: ["dense"] },
  images: clipImages,
  graphs: () => [
    { role: "model", feeds: ["input_ids", "attention_mask"], reads: [["text_embeds"]] },
    { role: "vision_model", feeds: ["pixel_values"], reads: [["image_embeds"]] },
  ],
  detect: {
    architecture: (arch) => arch === "CLIPModel",
    configure: configureClip,
    chooseGraphs: clipGraphs,
    preprocessor: true,
  },
});
