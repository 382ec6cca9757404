/**
 * Image decoding and preparation with sharp, on real JPEG, PNG and WebP bytes that sharp makes
 * here: sizes, EXIF rotation, grey and alpha inputs to RGB, the geometry of each model kind,
 * the pixels against a plain-TypeScript reference, and every kind of bad image.
 */
import assert from "node:assert/strict";
import sharp, { type Sharp } from "sharp";
import { ImageRejected, prepareImage } from "#worker/images/decode.ts";
import {
  CLIP_MEAN,
  CLIP_STD,
  IMAGENET_MEAN,
  IMAGENET_STD,
  type ImageSpec,
} from "#worker/images/spec.ts";
import { cropRgb, normalisePlanar, resizeRgb, type RgbImage } from "./reference.ts";

const LIMITS = { maxPixels: 40_000_000 };

/** A smooth test picture (smooth so that resampling filters agree closely). */
function picture(width: number, height: number): RgbImage {
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      data[i] = Math.round(127 + 100 * Math.sin(x / 5));
      data[i + 1] = Math.round((y * 255) / Math.max(1, height - 1));
      data[i + 2] = Math.round(127 + 120 * Math.cos((x + y) / 7));
    }
  }
  return { width, height, data };
}

function raw(img: RgbImage): Sharp {
  return sharp(img.data, { raw: { width: img.width, height: img.height, channels: 3 } });
}

/** Keep the tensor as it is (`fit` whose shortest edge already has the target size). */
function identity(
  img: { width: number; height: number },
  mean = IMAGENET_MEAN,
  std = IMAGENET_STD,
): ImageSpec {
  const short = Math.min(img.width, img.height);
  return { geometry: { mode: "fit", size: short, max: 100_000 }, kernel: "linear", mean, std };
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** One channel value of a prepared tensor, back in 0..255. */
function pixel(
  t: { data: Float32Array; width: number; height: number },
  spec: ImageSpec,
  c: number,
  x: number,
  y: number,
): number {
  const v = t.data[c * t.width * t.height + y * t.width + x];
  // `+ 0` turns -0 into 0 for strict equality.
  return Math.round((v * spec.std[c] + spec.mean[c]) * 255) + 0;
}

Deno.test("decode: PNG through the identity geometry equals the reference normalisation exactly", async () => {
  const img = picture(21, 13);
  const png = await raw(img).png().toBuffer();
  const spec = identity(img);
  const got = await prepareImage(png, "png", spec, LIMITS);
  assert.deepEqual([got.width, got.height], [21, 13]);
  assert.deepEqual(got.original, { width: 21, height: 13 });
  const want = normalisePlanar(img, spec.mean, spec.std);
  assert.ok(maxAbsDiff(got.data, want) < 1e-5, `diff ${maxAbsDiff(got.data, want)}`);
});

Deno.test("decode: CLIP geometry (shortest edge, bicubic, centre crop) matches the TypeScript reference", async () => {
  const img = picture(96, 64);
  const png = await raw(img).png().toBuffer();
  const spec: ImageSpec = {
    geometry: { mode: "crop", size: 24, crop: 24 },
    kernel: "cubic",
    mean: CLIP_MEAN,
    std: CLIP_STD,
  };
  const got = await prepareImage(png, "png", spec, LIMITS);
  assert.deepEqual([got.width, got.height], [24, 24]);
  // Shortest edge 64 → 24, the other edge int(24 × 96 / 64) = 36, crop left (36 - 24) / 2 = 6.
  const want = normalisePlanar(
    cropRgb(resizeRgb(img, 36, 24, "cubic"), 6, 0, 24, 24),
    spec.mean,
    spec.std,
  );
  // Within two 8-bit levels: libvips and the reference round at different steps.
  const tolerance = 2 / 255 / Math.min(...spec.std);
  const diff = maxAbsDiff(got.data, want);
  assert.ok(diff <= tolerance + 1e-6, `max diff ${diff} > ${tolerance}`);
});

Deno.test("decode: DETR geometry keeps the aspect ratio under both edge bounds (bilinear)", async () => {
  const img = picture(80, 40);
  const jpeg = await raw(img).jpeg({ quality: 95 }).toBuffer();
  const spec: ImageSpec = {
    geometry: { mode: "fit", size: 30, max: 50 },
    kernel: "linear",
    mean: IMAGENET_MEAN,
    std: IMAGENET_STD,
  };
  const got = await prepareImage(jpeg, "jpeg", spec, LIMITS);
  // 30 × 80 / 40 = 60 > 50, so the shortest edge becomes round(50 × 40 / 80) = 25.
  assert.deepEqual([got.width, got.height], [50, 25]);
  assert.deepEqual(got.frame, { width: 80, height: 40 });
});

Deno.test("decode: OWL geometries: stretched square, and padded square with the frame of the longest edge", async () => {
  const img = picture(40, 20);
  const webp = await raw(img).webp({ lossless: true }).toBuffer();
  const stretch: ImageSpec = {
    geometry: { mode: "stretch", size: 16 },
    kernel: "cubic",
    mean: CLIP_MEAN,
    std: CLIP_STD,
  };
  const s = await prepareImage(webp, "webp", stretch, LIMITS);
  assert.deepEqual([s.width, s.height, s.frame.width, s.frame.height], [16, 16, 40, 20]);
  const pad: ImageSpec = {
    geometry: { mode: "pad_square", size: 16, padValue: 0.5 },
    kernel: "linear",
    mean: CLIP_MEAN,
    std: CLIP_STD,
  };
  const p = await prepareImage(webp, "webp", pad, LIMITS);
  assert.deepEqual([p.width, p.height, p.frame.width, p.frame.height], [16, 16, 40, 40]);
  // The image fills the top 8 rows; the rest is the grey padding value.
  for (let c = 0; c < 3; c++) {
    assert.ok(Math.abs(p.data[c * 256 + 12 * 16 + 3] - (0.5 - CLIP_MEAN[c]) / CLIP_STD[c]) < 1e-6);
  }
});

Deno.test("decode: JPEG, PNG and WebP all report their size and give 3-channel tensors", async () => {
  const img = picture(33, 17);
  for (
    const [format, bytes] of [
      ["jpeg", await raw(img).jpeg().toBuffer()],
      ["png", await raw(img).png().toBuffer()],
      ["webp", await raw(img).webp().toBuffer()],
    ] as const
  ) {
    const got = await prepareImage(bytes, format, identity(img), LIMITS);
    assert.deepEqual(got.original, { width: 33, height: 17 }, format);
    assert.equal(got.data.length, 3 * 33 * 17, format);
    // Undeclared format: read from the bytes.
    const again = await prepareImage(bytes, undefined, identity(img), LIMITS);
    assert.equal(again.data.length, got.data.length);
  }
});

Deno.test("decode: EXIF orientation is honoured (orientation 6 turns the image a quarter clockwise)", async () => {
  // Stored 40×20: left half red, right half blue.
  const stored = new Uint8Array(40 * 20 * 3);
  for (let y = 0; y < 20; y++) {
    for (let x = 0; x < 40; x++) stored.set(x < 20 ? [255, 0, 0] : [0, 0, 255], (y * 40 + x) * 3);
  }
  const jpeg = await sharp(stored, { raw: { width: 40, height: 20, channels: 3 } })
    .withMetadata({ orientation: 6 })
    .jpeg({ quality: 95 })
    .toBuffer();
  assert.equal((await sharp(jpeg).metadata()).orientation, 6);
  const spec = identity({ width: 20, height: 40 });
  const got = await prepareImage(jpeg, "jpeg", spec, LIMITS);
  assert.deepEqual(got.original, { width: 20, height: 40 });
  assert.deepEqual([got.width, got.height], [20, 40]);
  // Displayed upright, the stored left (red) half is on top.
  assert.ok(pixel(got, spec, 0, 10, 5) > 200 && pixel(got, spec, 2, 10, 5) < 50, "top is red");
  assert.ok(
    pixel(got, spec, 2, 10, 35) > 200 && pixel(got, spec, 0, 10, 35) < 50,
    "bottom is blue",
  );
});

Deno.test("decode: grey, grey+alpha and RGBA inputs become RGB; alpha is dropped, not composited", async () => {
  const grey = new Uint8Array(8 * 6).map((_, i) => i * 5);
  const greyPng = await sharp(grey, { raw: { width: 8, height: 6, channels: 1 } })
    .toColourspace("b-w").png().toBuffer();
  assert.equal((await sharp(greyPng).metadata()).channels, 1);
  const spec = identity({ width: 8, height: 6 });
  const g = await prepareImage(greyPng, "png", spec, LIMITS);
  for (const [x, y] of [[0, 0], [3, 2], [7, 5]]) {
    const v = (y * 8 + x) * 5;
    for (let c = 0; c < 3; c++) assert.equal(pixel(g, spec, c, x, y), v, `grey ${x},${y} c${c}`);
  }
  const greyAlpha = new Uint8Array(8 * 6 * 2).map((_, i) => (i % 2 === 0 ? 90 : 0));
  const gaPng = await sharp(greyAlpha, { raw: { width: 8, height: 6, channels: 2 } })
    .toColourspace("b-w").png().toBuffer();
  assert.equal((await sharp(gaPng).metadata()).channels, 2);
  const ga = await prepareImage(gaPng, "png", spec, LIMITS);
  for (let c = 0; c < 3; c++) assert.equal(pixel(ga, spec, c, 4, 4), 90);
  // Fully transparent pixels keep their colour (PIL's convert("RGB") drops alpha the same way).
  const rgba = new Uint8Array(8 * 6 * 4);
  for (let i = 0; i < 48; i++) rgba.set([10, 200, 30, i % 2 === 0 ? 0 : 128], i * 4);
  const rgbaPng = await sharp(rgba, { raw: { width: 8, height: 6, channels: 4 } }).png().toBuffer();
  const a = await prepareImage(rgbaPng, "png", spec, LIMITS);
  assert.deepEqual([0, 1, 2].map((c) => pixel(a, spec, c, 0, 0)), [10, 200, 30]);
  assert.deepEqual([0, 1, 2].map((c) => pixel(a, spec, c, 1, 0)), [10, 200, 30]);
  // 16-bit PNG: still 8-bit values in, same tensor layout out.
  const png16 = await sharp(rgba, { raw: { width: 8, height: 6, channels: 4 } }).toColourspace(
    "rgb16",
  ).png().toBuffer();
  const deep = await prepareImage(png16, "png", spec, LIMITS);
  assert.deepEqual([0, 1, 2].map((c) => pixel(deep, spec, c, 0, 0)), [10, 200, 30]);
});

/** CRC-32 of PNG chunks. */
function crc32(bytes: Uint8Array): number {
  let c = ~0;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

/** A small PNG whose header claims `width`×`height` (valid CRC; the pixel data stays small). */
async function pngClaiming(width: number, height: number): Promise<Uint8Array> {
  const png = new Uint8Array(
    await sharp({ create: { width: 4, height: 4, channels: 3, background: "#888" } }).png()
      .toBuffer(),
  );
  const view = new DataView(png.buffer);
  // IHDR data starts at 16 (8 signature + 4 length + 4 type); its CRC follows its 13 bytes.
  view.setUint32(16, width);
  view.setUint32(20, height);
  view.setUint32(29, crc32(png.subarray(12, 29)));
  return png;
}

async function rejected(
  bytes: Uint8Array,
  format: "jpeg" | "png" | "webp" | undefined,
  pattern: RegExp,
  limits = LIMITS,
): Promise<void> {
  const spec = identity({ width: 4, height: 4 });
  await assert.rejects(() => prepareImage(bytes, format, spec, limits), (err: unknown) => {
    assert.ok(err instanceof ImageRejected, `not an ImageRejected: ${err}`);
    assert.match(err.message, pattern);
    return true;
  });
}

Deno.test("decode: bad images are refused with a reason", async () => {
  const img = picture(64, 48);
  const jpeg = new Uint8Array(await raw(img).jpeg().toBuffer());
  const png = new Uint8Array(await raw(img).png().toBuffer());
  const webp = new Uint8Array(await raw(img).webp().toBuffer());
  await rejected(
    new TextEncoder().encode("hello, this is not an image"),
    undefined,
    /not a JPEG, PNG or WebP/,
  );
  await rejected(
    new TextEncoder().encode("<svg xmlns='http://www.w3.org/2000/svg'/>"),
    "png",
    /not a JPEG, PNG or WebP/,
  );
  // Mislabelled: the bytes are a PNG.
  await rejected(png, "webp", /format 'webp' but its bytes are a png image/);
  await rejected(jpeg, "png", /format 'png' but its bytes are a jpeg image/);
  // Truncated: each format cut in half.
  await rejected(jpeg.subarray(0, jpeg.length >> 1), "jpeg", /cannot be decoded/);
  await rejected(png.subarray(0, png.length >> 1), "png", /cannot be decoded/);
  await rejected(webp.subarray(0, webp.length >> 1), "webp", /cannot be decoded/);
  // Corrupt: a valid signature followed by garbage.
  const garbage = new Uint8Array(2000).map((_, i) => (i * 7919) % 251);
  await rejected(new Uint8Array([0xff, 0xd8, 0xff, ...garbage]), "jpeg", /cannot be decoded/);
  await rejected(new Uint8Array([...png.subarray(0, 8), ...garbage]), "png", /cannot be decoded/);
  // Oversized header: refused from the header alone, before any decoding.
  const huge = await pngClaiming(20000, 20000);
  const t0 = performance.now();
  await rejected(
    huge,
    "png",
    /20000×20000 = 400000000 pixels; the limit is 40000000 \(SVC_MAX_IMAGE_PIXELS\)/,
  );
  // Generous bound: decoding 400 megapixels would take many seconds and gigabytes.
  assert.ok(performance.now() - t0 < 2000, "refused from the header");
  await rejected(png, "png", /64×48 = 3072 pixels; the limit is 3000/, { maxPixels: 3000 });
});
