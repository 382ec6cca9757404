/**
 * Image bytes → one model input tensor, with `sharp` (libvips): signature check, a JPEG's scan
 * count, header checks against the pixel and aspect-ratio limits, EXIF rotation, resize, crop,
 * RGB, normalisation. Runs on the image pool's threads (never on the server's main thread) and in
 * tests. Animated and multi-page images (animated WebP) are read as their first frame, as the
 * models' reference processors (PIL) read them.
 */
import sharp, { type Metadata } from "sharp";
import type { ImageFormat } from "@svc/shared/schemas/item";
import { type GeometryPlan, planGeometry, type Size } from "./geometry.ts";
import { countJpegScans } from "./jpeg_scans.ts";
import { toPlanarTensor } from "./normalize.ts";
import { sniffImageFormat } from "./sniff.ts";
import type { ImageSpec } from "./spec.ts";

// Every image is decoded once and comes from a client: libvips' operation cache would only hold
// memory (and other clients' pixels) for nothing.
sharp.cache(false);

/** One prepared image: `[3, height, width]` float32 plus what box decoding needs. */
export interface PreparedImage {
  data: Float32Array<ArrayBuffer>;
  width: number;
  height: number;
  /** Size after EXIF rotation: the pixels boxes are reported in. */
  original: Size;
  /** Original pixels that the model's normalised coordinates 0..1 span. */
  frame: Size;
}

/** The image cannot be used; the message is for the client (the caller adds which image). */
export class ImageRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ImageRejected";
  }
}

/** Bounds applied while decoding. */
export interface DecodeLimits {
  /** Most pixels (width × height) a decoded image may have (`SVC_MAX_IMAGE_PIXELS`). */
  maxPixels: number;
  /** Most scans a JPEG may have (`SVC_MAX_JPEG_SCANS`); absent: not counted. */
  maxJpegScans?: number;
  /** Longest edge over shortest edge at most (`SVC_MAX_IMAGE_ASPECT_RATIO`); absent: any. */
  maxAspectRatio?: number;
}

/** Only the first frame of an animated or multi-page image is read (and sized by the header). */
const FIRST_FRAME = { pages: 1, page: 0 } as const;

/** Decoder messages are for developers; keep what the client sees short and plain. */
function decoderMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const first = text.split("\n")[0].replace(/[^\x20-\x7e]/g, "").trim();
  return first.length > 160 ? `${first.slice(0, 160)}...` : first || "unknown decoder error";
}

/** Check the signature and header of `bytes`; the oriented size when it may be decoded. */
export async function checkImage(
  bytes: Uint8Array,
  declared: ImageFormat | undefined,
  limits: DecodeLimits,
): Promise<{ format: ImageFormat; original: Size }> {
  const format = sniffImageFormat(bytes);
  if (format === undefined) throw new ImageRejected("is not a JPEG, PNG or WebP image");
  if (declared !== undefined && declared !== format) {
    throw new ImageRejected(`has format '${declared}' but its bytes are a ${format} image`);
  }
  if (format === "jpeg" && limits.maxJpegScans !== undefined) {
    const scans = countJpegScans(bytes, limits.maxJpegScans);
    if (scans > limits.maxJpegScans) {
      throw new ImageRejected(
        `is a JPEG of more than ${limits.maxJpegScans} scans (each one a pass of the decoder ` +
          `over the whole image); the limit is ${limits.maxJpegScans} (SVC_MAX_JPEG_SCANS)`,
      );
    }
  }
  let meta: Metadata;
  try {
    // Reads the header only: sizes are known before any pixel is decoded.
    meta = await sharp(bytes, { failOn: "error", limitInputPixels: false, ...FIRST_FRAME })
      .metadata();
  } catch (err) {
    throw new ImageRejected(`cannot be decoded as ${format}: ${decoderMessage(err)}`);
  }
  const { width, height } = meta;
  if (!width || !height) throw new ImageRejected(`has no size in its ${format} header`);
  if (meta.format !== format) {
    throw new ImageRejected(`is not a readable ${format} image`);
  }
  if (width * height > limits.maxPixels) {
    throw new ImageRejected(
      `is ${width}×${height} = ${width * height} pixels; the limit is ${limits.maxPixels} ` +
        `(SVC_MAX_IMAGE_PIXELS)`,
    );
  }
  const ratio = Math.max(width, height) / Math.min(width, height);
  if (limits.maxAspectRatio !== undefined && ratio > limits.maxAspectRatio) {
    throw new ImageRejected(
      `is ${width}×${height}, an aspect ratio of ${ratioText(ratio)}; the limit is ` +
        `${limits.maxAspectRatio} (SVC_MAX_IMAGE_ASPECT_RATIO)`,
    );
  }
  // EXIF orientations 5 to 8 turn the image a quarter: width and height swap.
  const turned = (meta.orientation ?? 1) >= 5;
  return {
    format,
    original: turned ? { width: height, height: width } : { width, height },
  };
}

/** Decode, rotate, resize and crop to 8-bit RGB as `plan` says. */
async function decodeRgb(
  bytes: Uint8Array,
  plan: GeometryPlan,
  spec: ImageSpec,
  limits: DecodeLimits,
): Promise<{ rgb: Uint8Array; size: Size }> {
  let pipeline = sharp(bytes, {
    failOn: "error",
    limitInputPixels: limits.maxPixels,
    sequentialRead: true,
    ...FIRST_FRAME,
  })
    .rotate()
    .resize(plan.resize.width, plan.resize.height, {
      fit: "fill",
      kernel: spec.kernel,
      // Decode at full size before resizing, as the models' reference processors do: JPEG
      // shrink-on-load is faster but changes the pixels the model sees.
      fastShrinkOnLoad: false,
    });
  if (plan.crop) pipeline = pipeline.extract(plan.crop);
  try {
    const { data, info } = await pipeline
      // Models read RGB: alpha is dropped (not composited, as PIL's convert("RGB") does) and
      // grey or CMYK images become sRGB.
      .removeAlpha()
      .toColourspace("srgb")
      .raw({ depth: "uchar" })
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`decoder produced ${info.channels} channels`);
    return {
      rgb: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
      size: { width: info.width, height: info.height },
    };
  } catch (err) {
    throw new ImageRejected(`cannot be decoded: ${decoderMessage(err)}`);
  }
}

/** Turn image bytes into the model input `spec` describes; throws ImageRejected for bad images. */
export async function prepareImage(
  bytes: Uint8Array,
  declared: ImageFormat | undefined,
  spec: ImageSpec,
  limits: DecodeLimits,
): Promise<PreparedImage> {
  const { original } = await checkImage(bytes, declared, limits);
  const plan = planGeometry(spec.geometry, original.width, original.height);
  checkPlan(plan, original);
  const { rgb, size } = await decodeRgb(bytes, plan, spec, limits);
  const padValue = spec.geometry.mode === "pad_square" ? spec.geometry.padValue : 0;
  const data = toPlanarTensor(rgb, size, plan.tensor, spec.mean, spec.std, padValue);
  return {
    data,
    width: plan.tensor.width,
    height: plan.tensor.height,
    original,
    frame: plan.frame,
  };
}

/** `39999999:1`, `2.5:1`: the ratio as people write it. */
function ratioText(ratio: number): string {
  return `${Number.isInteger(ratio) ? ratio : ratio.toFixed(1)}:1`;
}

/** sharp's bound on a resize target's side. */
const MAX_RESIZE_SIDE = 100_000_000;

/**
 * Throw when the model's resize would leave less than one pixel on a side (a 1×40,000,000 image
 * whose longest edge must shrink to 1333), or more than the resizer takes: shapes that an
 * aspect-ratio limit raised above the default lets through.
 */
function checkPlan(plan: GeometryPlan, original: Size): void {
  const sides = [plan.resize.width, plan.resize.height];
  if (plan.crop) sides.push(plan.crop.width, plan.crop.height);
  const bad = sides.find((s) => !Number.isSafeInteger(s) || s < 1 || s > MAX_RESIZE_SIDE);
  if (bad === undefined) return;
  const { width, height } = original;
  throw new ImageRejected(
    `is ${width}×${height} (${ratioText(Math.max(width, height) / Math.min(width, height))}): ` +
      `resized for this model one side would be ${bad} pixels; SVC_MAX_IMAGE_ASPECT_RATIO lets ` +
      `this shape through, the model cannot read it`,
  );
}
