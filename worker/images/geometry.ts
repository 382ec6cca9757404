/**
 * Sizes of one image on its way to a model input: what to resize to, what to crop, how large the
 * tensor is, and which original pixels the model's normalised box coordinates span. Pure
 * arithmetic (the transformers image processors' rounding rules), shared by the pool and tests.
 */
import type { ImageGeometry } from "./spec.ts";

/** Width and height in pixels. */
export interface Size {
  width: number;
  height: number;
}

/** The plan for one image. */
export interface GeometryPlan {
  /** Size the (EXIF-rotated) image is resized to. */
  resize: Size;
  /** Region of the resized image kept (centre crop); absent: all of it. */
  crop?: { left: number; top: number; width: number; height: number };
  /** Tensor size; the kept pixels sit at its top left, the rest is padding. */
  tensor: Size;
  /**
   * Original pixels that normalised box coordinates 0..1 span: the image itself, or the padded
   * square (OWLv2) whose right or bottom part lies outside the image.
   */
  frame: Size;
}

/** Shortest edge to `size`, longest edge at most `max` (transformers' get_size_with_aspect_ratio). */
export function fitSize(width: number, height: number, size: number, max: number): Size {
  const short = Math.min(width, height);
  const long = Math.max(width, height);
  let target = size;
  if ((long / short) * target > max) target = Math.round((max * short) / long);
  if ((height <= width && height === target) || (width <= height && width === target)) {
    return { width, height };
  }
  return width < height
    ? { width: target, height: Math.max(1, Math.trunc((target * height) / width)) }
    : { width: Math.max(1, Math.trunc((target * width) / height)), height: target };
}

/** Shortest edge to `size`, the other edge scaled and truncated (CLIP's resize). */
export function shortestEdgeSize(width: number, height: number, size: number): Size {
  return width <= height
    ? { width: size, height: Math.max(1, Math.trunc((size * height) / width)) }
    : { width: Math.max(1, Math.trunc((size * width) / height)), height: size };
}

/** Plan the resize, crop and tensor of a `width`×`height` image (after EXIF rotation). */
export function planGeometry(g: ImageGeometry, width: number, height: number): GeometryPlan {
  const frame = { width, height };
  switch (g.mode) {
    case "crop": {
      const resize = shortestEdgeSize(width, height, g.size);
      const w = Math.min(g.crop, resize.width);
      const h = Math.min(g.crop, resize.height);
      return {
        resize,
        crop: {
          left: Math.trunc((resize.width - w) / 2),
          top: Math.trunc((resize.height - h) / 2),
          width: w,
          height: h,
        },
        tensor: { width: g.crop, height: g.crop },
        frame,
      };
    }
    case "fit": {
      const resize = fitSize(width, height, g.size, g.max);
      return { resize, tensor: resize, frame };
    }
    case "stretch":
      return {
        resize: { width: g.size, height: g.size },
        tensor: { width: g.size, height: g.size },
        frame,
      };
    case "pad_square": {
      const side = Math.max(width, height);
      const resize = {
        width: Math.max(1, Math.round((width * g.size) / side)),
        height: Math.max(1, Math.round((height * g.size) / side)),
      };
      return {
        resize,
        tensor: { width: g.size, height: g.size },
        frame: { width: side, height: side },
      };
    }
  }
}
