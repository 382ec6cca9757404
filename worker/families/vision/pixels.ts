/** Stacking prepared images into one `pixel_values` batch (with the mask detection graphs read). */
import type { PixelInput } from "../types.ts";

/** A `[B, 3, H, W]` float32 batch, and its `[B, H, W]` mask of real (1) and padded (0) pixels. */
export interface PixelBatch {
  batch: number;
  height: number;
  width: number;
  values: Float32Array;
  mask: BigInt64Array;
}

/**
 * Stack images into one batch of the largest height and width; smaller images sit at the top
 * left with zeros (normalised value 0, as the reference processors pad) around them.
 */
export function stackPixels(images: readonly PixelInput[]): PixelBatch {
  const batch = images.length;
  let height = 1;
  let width = 1;
  for (const p of images) {
    height = Math.max(height, p.height);
    width = Math.max(width, p.width);
  }
  const plane = height * width;
  const values = new Float32Array(batch * 3 * plane);
  const mask = new BigInt64Array(batch * plane);
  images.forEach((p, b) => {
    const src = p.width * p.height;
    for (let c = 0; c < 3; c++) {
      const from = c * src;
      const to = (b * 3 + c) * plane;
      if (p.width === width) values.set(p.data.subarray(from, from + src), to);
      else {
        for (let y = 0; y < p.height; y++) {
          values.set(p.data.subarray(from + y * p.width, from + (y + 1) * p.width), to + y * width);
        }
      }
    }
    for (let y = 0; y < p.height; y++) {
      mask.fill(1n, b * plane + y * width, b * plane + y * width + p.width);
    }
  });
  return { batch, height, width, values, mask };
}
