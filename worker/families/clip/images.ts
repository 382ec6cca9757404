/** CLIP's images: shortest edge to `image_size`, then a centred square crop of that size. */
import type { FamilyImages } from "../info.ts";
import { CLIP_MEAN, CLIP_STD } from "../../images/normalisation.ts";

/** How CLIP reads its images. */
export const clipImages: FamilyImages = {
  resample: "bicubic",
  spec: ({ size, triple }, kernel) => ({
    geometry: { mode: "crop", size: size("image_size", 224), crop: size("image_size", 224) },
    kernel,
    mean: triple("image_mean", CLIP_MEAN),
    std: triple("image_std", CLIP_STD),
  }),
  fromPreprocessor(pre, { squareSize, fail }) {
    const size = squareSize(pre.size, "size");
    const crop = pre.do_center_crop === false ? size : squareSize(pre.crop_size, "crop_size");
    if (size === undefined) fail("size", "gives no shortest edge");
    if (crop !== size) {
      fail("crop_size", `is ${crop}, not the resize's ${size}; only equal sizes are read`);
    }
    return { image_size: size };
  },
};
