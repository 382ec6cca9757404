/**
 * How a model wants its images prepared, read from its catalog entry (`family_options`). Plain
 * data, so the main thread can build it and send it to the image pool with every job; no image
 * library is imported here.
 */
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { FAMILY_INFOS } from "../families/infos.ts";

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

export { CLIP_MEAN, CLIP_STD, IMAGENET_MEAN, IMAGENET_STD } from "./normalisation.ts";

/** Checked readers of a model's `family_options`, for its family's image spec. */
export interface ImageOptionReader {
  options: Record<string, unknown>;
  /** An integer from 1 to 4096, else `fallback` when absent. */
  size(key: string, fallback: number): number;
  /** Three numbers, else `fallback` when absent. */
  triple(key: string, fallback: [number, number, number]): [number, number, number];
}

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
  const images = FAMILY_INFOS[config.family]?.images;
  const resample = o.resample ?? images?.resample ?? "bilinear";
  if (resample !== "bicubic" && resample !== "bilinear") {
    throw new Error(`${where}.resample must be 'bicubic' or 'bilinear'`);
  }
  const kernel = resample === "bicubic" ? "cubic" : "linear";
  if (!images) {
    throw new Error(`model '${config.id}' lists image inputs but ${config.family} reads none`);
  }
  return images.spec({ options: o, size, triple }, kernel);
}
