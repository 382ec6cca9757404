/**
 * Image bytes → one model input tensor, with `sharp` (libvips): signature check, header check
 * against the pixel limit, EXIF rotation, resize, crop, RGB, normalisation. Runs on the image
 * pool's threads (never on the server's main thread) and in tests.
 */
import sharp, { type Metadata } from "sharp";
import type { ImageFormat } from "@svc/shared/schemas/item";
import { type GeometryPlan, planGeometry, type Size } from "./geometry.ts";
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
  /** Most pixels (width × height) a decoded image may have. */
  maxPixels: number;
}

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
  let meta: Metadata;
  try {
    // Reads the header only: sizes are known before any pixel is decoded.
    meta = await sharp(bytes, { failOn: "error", limitInputPixels: false }).metadata();
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
