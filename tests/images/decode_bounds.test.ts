/**
 * Issue 23.3: what an image costs to decode is bounded, not just its bytes and pixels. Each case
 * is an attack that cost seconds (or answered 500) before: a progressive JPEG of 10,000 repeated
 * scans (35 s), a 1 × 39,999,999 PNG (7.5 s), degenerate shapes whose resize target had a side
 * of 0 (500 "image preprocessing failed"). Now each is a quick ImageRejected naming its size and
 * setting; animated WebP reads its first frame; PNG chunks that expand, many chunks and
 * interlacing are read within the usual cost.
 */
import assert from "node:assert/strict";
import sharp from "sharp";
import { type DecodeLimits, ImageRejected, prepareImage } from "#worker/images/decode.ts";
import {
  CLIP_MEAN,
  CLIP_STD,
  IMAGENET_MEAN,
  IMAGENET_STD,
  type ImageSpec,
} from "#worker/images/spec.ts";
import { animatedWebp, blackPng, concat, pngChunk, scanBombJpeg, zlibZeros } from "./bombs.ts";

/** The worker's defaults. */
const LIMITS: DecodeLimits = { maxPixels: 40_000_000, maxAspectRatio: 100, maxJpegScans: 256 };

const DETR: ImageSpec = {
  geometry: { mode: "fit", size: 800, max: 1333 },
  kernel: "linear",
  mean: IMAGENET_MEAN,
  std: IMAGENET_STD,
};
const CLIP: ImageSpec = {
  geometry: { mode: "crop", size: 224, crop: 224 },
  kernel: "cubic",
  mean: CLIP_MEAN,
  std: CLIP_STD,
};

/** Prepare `bytes` and expect a refusal matching `pattern`; returns how long it took (ms). */
async function refused(
  bytes: Uint8Array,
  pattern: RegExp,
  spec = DETR,
  limits = LIMITS,
): Promise<number> {
  const t0 = performance.now();
  await assert.rejects(() => prepareImage(bytes, undefined, spec, limits), (err: unknown) => {
    assert.ok(err instanceof ImageRejected, `not an ImageRejected: ${err}`);
    assert.match(err.message, pattern);
    return true;
  });
  return performance.now() - t0;
}

Deno.test("decode bounds: a JPEG of 10,000 repeated scans is refused before decoding", async () => {
  // 4000×4000 (under the pixel limit): decoding it would take about 2 ms a scan here.
  const bomb = await scanBombJpeg(4000, 4000, 10_000);
  assert.ok(bomb.length < 1_000_000, `${bomb.length} bytes`);
  const ms = await refused(
    bomb,
    /is a JPEG of more than 256 scans .*; the limit is 256 \(SVC_MAX_JPEG_SCANS\)/,
  );
  // The count is a walk over 700 KB; the bound is generous (the decode is tens of seconds).
  assert.ok(ms < 2_000, `${ms} ms`);
  // Up to the bound it is an image like any other.
  const few = await scanBombJpeg(64, 48, 200);
  const ok = await prepareImage(few, "jpeg", CLIP, LIMITS);
  assert.deepEqual([ok.width, ok.height, ok.original.width], [224, 224, 64]);
});

Deno.test("decode bounds: a 1 × 39,999,999 PNG is refused from its header", async () => {
  const tall = blackPng(1, 39_999_999);
  assert.ok(tall.length < 200_000, `${tall.length} bytes`);
  const ms = await refused(
    tall,
    /is 1×39999999, an aspect ratio of 39999999:1; the limit is 100 \(SVC_MAX_IMAGE_ASPECT_RATIO\)/,
  );
  // Decoding it took 7.5 s (9 s here); the header says enough.
  assert.ok(ms < 2_000, `${ms} ms`);
});

Deno.test("decode bounds: degenerate shapes are refusals naming the size (DETR and CLIP geometry)", async () => {
  const cases: [Uint8Array, RegExp][] = [
    [blackPng(2, 20_000_000), /is 2×20000000, an aspect ratio of 10000000:1/],
    [
      new Uint8Array(
        await sharp({ create: { width: 1, height: 65_000, channels: 3, background: "#0f0" } })
          .jpeg().toBuffer(),
      ),
      /is 1×65000, an aspect ratio of 65000:1/,
    ],
    [blackPng(30_000, 1), /is 30000×1, an aspect ratio of 30000:1/],
  ];
  for (const spec of [DETR, CLIP]) {
    for (const [bytes, pattern] of cases) await refused(bytes, pattern, spec);
  }
  // A shape within the limit is served: 100:1 fits DETR as 1300×13.
  const wide = await prepareImage(blackPng(1000, 10), "png", DETR, LIMITS);
  assert.deepEqual([wide.width, wide.height], [1300, 13]);
});

Deno.test("decode bounds: with the aspect limit raised, a resize to under one pixel is still a refusal", async () => {
  const raised = { ...LIMITS, maxAspectRatio: 1_000_000 };
  // DETR keeps the longest edge at 1333: 1×65000 would become 0×1333 (a 500 before).
  await refused(
    blackPng(1, 65_000),
    /is 1×65000 \(65000:1\): resized for this model one side would be 0 pixels; SVC_MAX_IMAGE_ASPECT_RATIO lets this shape through/,
    DETR,
    raised,
  );
  // OWLv2 pads to a square of the longest edge first: the short side keeps a pixel, it is served.
  const owlv2: ImageSpec = { ...CLIP, geometry: { mode: "pad_square", size: 768, padValue: 0.5 } };
  const padded = await prepareImage(blackPng(1, 5_000), "png", owlv2, raised);
  assert.deepEqual([padded.width, padded.height], [768, 768]);
});

Deno.test("decode bounds: an animated WebP is read as its first frame", async () => {
  const anim = await animatedWebp(40, 30, ["#ff0000", "#00ff00", "#0000ff"]);
  assert.equal((await sharp(anim).metadata()).pages, 3, "the test image is animated");
  const spec: ImageSpec = { ...DETR, geometry: { mode: "fit", size: 30, max: 1000 } };
  const got = await prepareImage(anim, "webp", spec, LIMITS);
  assert.deepEqual([got.width, got.height], [40, 30]);
  assert.deepEqual(got.original, { width: 40, height: 30 });
  // Red, from the first frame (lossy WebP: within a few levels).
  const plane = 40 * 30;
  const channel = (c: number) => (got.data[c * plane] * spec.std[c] + spec.mean[c]) * 255;
  assert.ok(channel(0) > 245 && channel(1) < 10 && channel(2) < 10, `${[0, 1, 2].map(channel)}`);
});

Deno.test("decode bounds: PNG chunks that expand, many chunks and interlacing cost no more than the pixels", async () => {
  const spec: ImageSpec = { ...CLIP, geometry: { mode: "crop", size: 32, crop: 32 } };
  // A zTXt chunk that inflates to 200 MB, and 100,000 tEXt chunks (1.5 MB).
  const comment = concat([new TextEncoder().encode("Comment\0\0"), zlibZeros(200 << 20)]);
  const many = Array.from(
    { length: 100_000 },
    () => pngChunk("tEXt", new Uint8Array([107, 0, 118])),
  );
  for (const extra of [[pngChunk("zTXt", comment)], many]) {
    const t0 = performance.now();
    const got = await prepareImage(blackPng(64, 64, extra), "png", spec, LIMITS);
    const ms = performance.now() - t0;
    assert.equal(got.width, 32);
    // 15-30 ms here: the text is not inflated. The bound is generous.
    assert.ok(ms < 5_000, `${ms} ms`);
  }
  // Interlaced (Adam7) PNG: decoded whole, in memory bounded by SVC_MAX_IMAGE_PIXELS; the same
  // pixels as the plain file.
  const raw = new Uint8Array(48 * 40 * 3).map((_, i) => (i * 37) % 256);
  const image = () => sharp(raw, { raw: { width: 48, height: 40, channels: 3 } });
  const plain = await prepareImage(await image().png().toBuffer(), "png", spec, LIMITS);
  const adam7 = await image().png({ progressive: true }).toBuffer();
  assert.equal((await sharp(adam7).metadata()).isProgressive, true);
  const interlaced = await prepareImage(adam7, "png", spec, LIMITS);
  assert.deepEqual(interlaced.data, plain.data);
});
