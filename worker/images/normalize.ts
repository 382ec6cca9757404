/** Interleaved 8-bit RGB pixels into a normalised planar float tensor (the models' `pixel_values`). */
import type { Size } from "./geometry.ts";

/**
 * Write `rgb` (`src.width`×`src.height`, 3 bytes a pixel, row-major) into a new `[3, H, W]`
 * float32 tensor of size `tensor`: `(v / 255 - mean[c]) / std[c]`. The source sits at the top
 * left; the rest of the tensor holds `padValue` (0 to 1) normalised the same way.
 */
export function toPlanarTensor(
  rgb: Uint8Array,
  src: Size,
  tensor: Size,
  mean: readonly number[],
  std: readonly number[],
  padValue = 0,
): Float32Array<ArrayBuffer> {
  const { width: W, height: H } = tensor;
  const plane = W * H;
  const out = new Float32Array(3 * plane);
  const w = Math.min(src.width, W);
  const h = Math.min(src.height, H);
  for (let c = 0; c < 3; c++) {
    // One multiply-add per value: (v / 255 - m) / s = v * a + b.
    const a = 1 / (255 * std[c]);
    const b = -mean[c] / std[c];
    const base = c * plane;
    if (w < W || h < H) out.fill((padValue - mean[c]) / std[c], base, base + plane);
    for (let y = 0; y < h; y++) {
      let i = (y * src.width) * 3 + c;
      const row = base + y * W;
      for (let x = 0; x < w; x++, i += 3) out[row + x] = rgb[i] * a + b;
    }
  }
  return out;
}
