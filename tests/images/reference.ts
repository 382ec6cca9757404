/**
 * Plain-TypeScript image preprocessing to check the sharp pipeline against: separable resampling
 * in the manner of PIL's `Image.resize` (the reference processors' resize, with the filter
 * widened by the scale when shrinking), centre crop, and normalisation to planar float32.
 */

/** 8-bit interleaved RGB pixels. */
export interface RgbImage {
  width: number;
  height: number;
  /** `width × height × 3` values, row-major. */
  data: Uint8Array;
}

/** Keys' cubic with a = -0.5 (PIL BICUBIC, libvips' cubic). */
function cubic(x: number): number {
  const a = -0.5;
  x = Math.abs(x);
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

function triangle(x: number): number {
  x = Math.abs(x);
  return x < 1 ? 1 - x : 0;
}

/** Resample one axis: `n` samples of stride `step` → `out` samples (float). */
function weightsFor(inSize: number, outSize: number, kernel: "cubic" | "linear") {
  const filter = kernel === "cubic" ? cubic : triangle;
  const support = kernel === "cubic" ? 2 : 1;
  const scale = inSize / outSize;
  const fscale = Math.max(scale, 1);
  const radius = support * fscale;
  const taps: { start: number; w: number[] }[] = [];
  for (let o = 0; o < outSize; o++) {
    const center = (o + 0.5) * scale;
    const lo = Math.max(0, Math.floor(center - radius + 0.5));
    const hi = Math.min(inSize, Math.floor(center + radius + 0.5));
    const w: number[] = [];
    let sum = 0;
    for (let i = lo; i < hi; i++) {
      const v = filter((i - center + 0.5) / fscale);
      w.push(v);
      sum += v;
    }
    taps.push({ start: lo, w: w.map((v) => (sum === 0 ? 0 : v / sum)) });
  }
  return taps;
}

/** Resize with separable filtering (horizontal then vertical), rounded to 8 bits at the end. */
export function resizeRgb(
  img: RgbImage,
  width: number,
  height: number,
  kernel: "cubic" | "linear",
): RgbImage {
  const hx = weightsFor(img.width, width, kernel);
  const vy = weightsFor(img.height, height, kernel);
  const tmp = new Float64Array(width * img.height * 3);
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < width; x++) {
      const { start, w } = hx[x];
      for (let c = 0; c < 3; c++) {
        let s = 0;
        for (let k = 0; k < w.length; k++) {
          s += w[k] * img.data[(y * img.width + start + k) * 3 + c];
        }
        tmp[(y * width + x) * 3 + c] = s;
      }
    }
  }
  const out = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const { start, w } = vy[y];
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < 3; c++) {
        let s = 0;
        for (let k = 0; k < w.length; k++) s += w[k] * tmp[((start + k) * width + x) * 3 + c];
        out[(y * width + x) * 3 + c] = Math.min(255, Math.max(0, Math.round(s)));
      }
    }
  }
  return { width, height, data: out };
}

/** The `w`×`h` region at (`left`, `top`). */
export function cropRgb(img: RgbImage, left: number, top: number, w: number, h: number): RgbImage {
  const out = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) {
    out.set(
      img.data.subarray(((top + y) * img.width + left) * 3, ((top + y) * img.width + left + w) * 3),
      y * w * 3,
    );
  }
  return { width: w, height: h, data: out };
}

/** Planar `[3, H, W]` float32 of `(v / 255 - mean) / std`, computed value by value. */
export function normalisePlanar(img: RgbImage, mean: number[], std: number[]): Float32Array {
  const out = new Float32Array(3 * img.width * img.height);
  for (let c = 0; c < 3; c++) {
    for (let y = 0; y < img.height; y++) {
      for (let x = 0; x < img.width; x++) {
        const v = img.data[(y * img.width + x) * 3 + c];
        out[c * img.width * img.height + y * img.width + x] = (v / 255 - mean[c]) / std[c];
      }
    }
  }
  return out;
}
