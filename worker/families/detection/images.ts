/** DETR-style images: shortest edge to `shortest_edge`, longest at most `longest_edge`. */
import type { FamilyImages } from "../info.ts";
import { IMAGENET_MEAN, IMAGENET_STD } from "../../images/normalisation.ts";
import { isJsonObject } from "../../catalog/detect/repo_view.ts";

/** How closed-set detectors read their images. */
export const detectionImages: FamilyImages = {
  resample: "bilinear",
  spec: ({ size, triple }, kernel) => ({
    geometry: {
      mode: "fit",
      size: size("shortest_edge", 800),
      max: size("longest_edge", 1333),
    },
    kernel,
    mean: triple("image_mean", IMAGENET_MEAN),
    std: triple("image_std", IMAGENET_STD),
  }),
  fromPreprocessor(pre, { fail }) {
    const size = pre.size;
    if (
      !isJsonObject(size) || typeof size.shortest_edge !== "number" ||
      typeof size.longest_edge !== "number"
    ) {
      return fail("size", "must give shortest_edge and longest_edge (a DETR-style resize)");
    }
    return { shortest_edge: size.shortest_edge, longest_edge: size.longest_edge };
  },
};
