/**
 * Image preprocessing throughput: JPEG bytes → model input tensors through the worker's image
 * pool (the code requests use), for CLIP's 224 crop and DETR's 800/1333 fit, at 1 thread and at
 * SVC_IMAGE_WORKERS threads. Prints one JSON line per case (images/s, mean ms per image).
 *
 *   deno task bench:images [--threads 4] [--images 64] [--size 640x480]
 */
import { parseArgs } from "node:util";
import sharp from "sharp";
import { ImagePool } from "#worker/images/pool.ts";
import {
  CLIP_MEAN,
  CLIP_STD,
  IMAGENET_MEAN,
  IMAGENET_STD,
  type ImageSpec,
} from "#worker/images/spec.ts";

const USAGE = `usage: npx deno task bench:images [--threads 4] [--images 64] [--size 640x480]

Image preprocessing throughput of the worker's image pool (decode, resize, normalise JPEGs),
for CLIP's 224 crop and DETR's 800/1333 fit, at 1 thread and at --threads; one JSON line per
case (images/s, mean ms per image). Run it on a quiet machine.`;

let values: { threads?: string; images?: string; size?: string; help?: boolean };
try {
  ({ values } = parseArgs({
    options: {
      threads: { type: "string", default: "4" },
      images: { type: "string", default: "64" },
      size: { type: "string", default: "640x480" },
      help: { type: "boolean", short: "h", default: false },
    },
  }));
} catch (err) {
  console.error(`${(err as Error).message}\n${USAGE}`);
  Deno.exit(2);
}
if (values.help) {
  console.log(USAGE);
  Deno.exit(0);
}
const [width, height] = values.size!.split("x").map(Number);
const count = Number(values.images);

/** A photo-like JPEG (gradients and noise, so the encoder has real work). */
async function photo(seed: number): Promise<Uint8Array> {
  const data = new Uint8Array(width * height * 3);
  let s = seed * 7919 + 1;
  for (let i = 0; i < data.length; i++) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    const x = (i / 3) % width;
    data[i] = (x * 255 / width + (s >> 24)) & 255;
  }
  return new Uint8Array(
    await sharp(data, { raw: { width, height, channels: 3 } }).jpeg({ quality: 90 }).toBuffer(),
  );
}

const SPECS: Record<string, ImageSpec> = {
  clip_224: {
    geometry: { mode: "crop", size: 224, crop: 224 },
    kernel: "cubic",
    mean: CLIP_MEAN,
    std: CLIP_STD,
  },
  detr_800: {
    geometry: { mode: "fit", size: 800, max: 1333 },
    kernel: "linear",
    mean: IMAGENET_MEAN,
    std: IMAGENET_STD,
  },
};

const photos = await Promise.all(Array.from({ length: 8 }, (_, i) => photo(i)));
for (const threads of [...new Set([1, Number(values.threads)])]) {
  const pool = new ImagePool({ threads, maxQueue: count * 2, limits: { maxPixels: 1e8 } });
  try {
    for (const [name, spec] of Object.entries(SPECS)) {
      // Warm-up: start the threads and load sharp in each.
      await Promise.all(
        Array.from({ length: threads * 2 }, (_, i) => pool.prepare(photos[i % 8], "jpeg", spec)),
      );
      const t0 = performance.now();
      const results = await Promise.all(
        Array.from({ length: count }, (_, i) => pool.prepare(photos[i % 8], "jpeg", spec)),
      );
      const seconds = (performance.now() - t0) / 1000;
      const threadMs = results.reduce((s, r) => s + r.ms, 0) / results.length;
      console.log(JSON.stringify({
        bench: "image_preprocessing",
        spec: name,
        input: `${width}x${height} jpeg`,
        threads,
        images: count,
        images_per_s: Math.round((count / seconds) * 10) / 10,
        ms_per_image_in_thread: Math.round(threadMs * 100) / 100,
        cores: navigator.hardwareConcurrency,
      }));
    }
  } finally {
    await pool.close();
  }
}
