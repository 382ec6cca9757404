/**
 * How an image model wants its images, from `preprocessor_config.json` (the image processor's
 * saved settings): the resize and crop sizes, the resampling filter and the normalisation, as
 * the `family_options` the image pool reads (worker/images/spec.ts).
 */
import type { FamilyImages } from "../../families/info.ts";
import { DetectionError, OVERRIDE_FILE } from "./errors.ts";
import { isJsonObject, type Json } from "./repo_view.ts";

export const PREPROCESSOR = "preprocessor_config.json";

/** The checks a family's image settings use on preprocessor_config.json. */
export interface PreprocessorReader {
  /** A size given as a number or `{height, width}` (square only), or undefined when absent. */
  squareSize(v: unknown, field: string): number | undefined;
  /** Refuse a field, naming it and how to give the settings explicitly. */
  fail(field: string, problem: string): never;
}

/** PIL resampling codes → ours. */
const RESAMPLE: Record<number, "bicubic" | "bilinear"> = { 2: "bilinear", 3: "bicubic" };

function fail(field: string, problem: string): never {
  throw new DetectionError(
    PREPROCESSOR,
    field,
    problem,
    `Say it explicitly: put the image settings in {"family_options": {…}} in ${OVERRIDE_FILE} ` +
      "next to the weights (image_size, shortest_edge, longest_edge, image_mean, image_std, " +
      "resample)",
  );
}

/** A size given as a number or `{height, width}` (square only), or undefined when absent. */
function squareSize(v: unknown, field: string): number | undefined {
  if (typeof v === "number") return v;
  if (!isJsonObject(v)) return undefined;
  if (typeof v.height === "number" && typeof v.width === "number") {
    if (v.height !== v.width) fail(field, `is ${v.height}×${v.width}; only square inputs are read`);
    return v.height;
  }
  if (typeof v.shortest_edge === "number" && v.longest_edge === undefined) return v.shortest_edge;
  return undefined;
}

function triple(pre: Json, key: string): [number, number, number] {
  const v = pre[key];
  if (!Array.isArray(v) || v.length !== 3 || !v.every((x) => typeof x === "number")) {
    fail(key, "must be three numbers (RGB)");
  }
  return v as [number, number, number];
}

function resample(pre: Json): "bicubic" | "bilinear" {
  const r = pre.resample;
  const value = typeof r === "number" ? RESAMPLE[r] : undefined;
  if (!value) {
    fail("resample", `is ${JSON.stringify(r)}; this server resizes bicubic (3) or bilinear (2)`);
  }
  return value;
}

/**
 * `family_options` for the image pool from the repository's preprocessor config (read as JSON);
 * throws a DetectionError naming the field that is missing or not understood.
 */
export function imageOptions(
  images: FamilyImages | undefined,
  pre: unknown,
): Record<string, unknown> {
  if (!isJsonObject(pre)) fail("", "is missing: it says how images are resized and normalised");
  if (pre.do_normalize === false || pre.do_rescale === false) {
    fail("do_normalize", "turns off rescaling or normalisation, which this server always applies");
  }
  const common = {
    resample: resample(pre),
    image_mean: triple(pre, "image_mean"),
    image_std: triple(pre, "image_std"),
  };
  return images ? { ...images.fromPreprocessor(pre, { squareSize, fail }), ...common } : {};
}
