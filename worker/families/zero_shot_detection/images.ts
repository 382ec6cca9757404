/**
 * OWL-ViT and OWLv2 images: stretched to an `image_size` square (OWL-ViT), or padded to a square
 * first (OWLv2, `pad_to_square`).
 */
import type { FamilyImages } from "../info.ts";
import type { ImageGeometry } from "../../images/spec.ts";
import { CLIP_MEAN, CLIP_STD } from "../../images/normalisation.ts";

/** How open-vocabulary detectors read their images. */
export const zeroShotDetectionImages: FamilyImages = {
  resample: "bilinear",
  spec: ({ options: o, size, triple }, kernel) => {
    const side = size("image_size", 768);
    const geometry: ImageGeometry = o.pad_to_square === true
      ? { mode: "pad_square", size: side, padValue: 0.5 }
      : { mode: "stretch", size: side };
    return {
      geometry,
      kernel,
      mean: triple("image_mean", CLIP_MEAN),
      std: triple("image_std", CLIP_STD),
    };
  },
  fromPreprocessor(pre, { squareSize, fail }) {
    const size = squareSize(pre.size, "size");
    if (size === undefined) fail("size", "gives no square input size");
    const owlv2 = pre.image_processor_type === "Owlv2ImageProcessor";
    return { image_size: size, ...(owlv2 ? { pad_to_square: true } : {}) };
  },
};
