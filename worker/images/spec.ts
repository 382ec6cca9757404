/**
 * How a model wants its images prepared, read from its catalog entry (`family_options`). Plain
 * data, so the main thread can build it and send it to the image pool with every job; no image
 * library is imported here.
 */
import type { ModelConfig } from "@svc/shared/catalog/schema";

/**
 * Geometry of the model input, after EXIF rotation:
 * - `crop`: shortest edge to `size`, then a centred `crop`×`crop` square (CLIP).
 * - `fit`: shortest edge to `size` with the longest edge at most `max` (DETR, YOLOS); sizes vary,
 *   the detection family pads a batch to its largest image.
 * - `stretch`: exactly `size`×`size`, aspect ratio not kept (OWL-ViT).
 * - `pad_square`: padded at the bottom and right to a square of the longest edge, then resized to
 *   `size`×`size` (OWLv2); the padding holds `padValue` (0 to 1, before normalisation).
 */
export type ImageGeometry =
  | { mode: "crop"; size: number; crop: number }
  | { mode: "fit"; size: number; max: number }
  | { mode: "stretch"; size: number }
  | { mode: "pad_square"; size: number; padValue: number };

/** Everything the pool needs to turn image bytes into one model input. */
export interface ImageSpec {
  geometry: ImageGeometry;
  /** Resampling filter of the resize (the model's image processor names it). */
  kernel: "cubic" | "linear";
  /** Per-channel mean and standard deviation applied after scaling pixels to 0..1 (RGB order). */
  mean: [number, number, number];
  std: [number, number, number];
}

/** CLIP's published normalisation (also OWL-ViT's). */
export const CLIP_MEAN: [number, number, number] = [0.48145466, 0.4578275, 0.40821073];
/** CLIP's published standard deviations. */
export const CLIP_STD: [number, number, number] = [0.26862954, 0.26130258, 0.27577711];
/** ImageNet normalisation (DETR, YOLOS). */
export const IMAGENET_MEAN: [number, number, number] = [0.485, 0.456, 0.406];
/** ImageNet standard deviations. */
export const IMAGENET_STD: [number, number, number] = [0.229, 0.224, 0.225];

/** The model's image spec, or undefined when it reads no images. Throws on a bad catalog entry. */
export function imageSpecOf(config: ModelConfig): ImageSpec | undefined {
  if (!config.inputs.includes("image")) return undefined;
  const o = config.family_options;
  const where = `model '${config.id}' family_options`;
  const triple = (key: string, fallback: [number, number, number]): [number, number, number] => {
    const v = o[key] ?? fallback;
    if (!Array.isArray(v) || v.length !== 3 || !v.every((x) => typeof x === "number")) {
      throw new Error(`${where}.${key} must be three numbers`);
    }
    return v as [number, number, number];
  };
  const size = (key: string, fallback: number): number => {
    const v = o[key] ?? fallback;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > 4096) {
      throw new Error(`${where}.${key} must be an integer from 1 to 4096`);
    }
    return v;
  };
  const resample = o.resample ?? (config.family === "clip" ? "bicubic" : "bilinear");
  if (resample !== "bicubic" && resample !== "bilinear") {
    throw new Error(`${where}.resample must be 'bicubic' or 'bilinear'`);
  }
  const kernel = resample === "bicubic" ? "cubic" : "linear";
  switch (config.family) {
    case "clip":
      return {
        geometry: { mode: "crop", size: size("image_size", 224), crop: size("image_size", 224) },
        kernel,
        mean: triple("image_mean", CLIP_MEAN),
        std: triple("image_std", CLIP_STD),
      };
    case "detection":
      return {
        geometry: {
          mode: "fit",
          size: size("shortest_edge", 800),
          max: size("longest_edge", 1333),
        },
        kernel,
        mean: triple("image_mean", IMAGENET_MEAN),
        std: triple("image_std", IMAGENET_STD),
      };
    case "zero_shot_detection": {
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
    }
    default:
      throw new Error(`model '${config.id}' lists image inputs but ${config.family} reads none`);
  }
}
