/**
 * The image pool: images are prepared on pool threads (at most SVC_IMAGE_WORKERS at once), the
 * queue is bounded, waiting jobs leave when their request goes away, and bad images come back as
 * rejections while the pool keeps serving.
 */
import assert from "node:assert/strict";
import sharp from "sharp";
import { ServiceError } from "@svc/shared/errors";
import { ImageJobError, ImagePool } from "../../worker/images/pool.ts";
import { CLIP_MEAN, CLIP_STD, type ImageSpec } from "../../worker/images/spec.ts";

const SPEC: ImageSpec = {
  geometry: { mode: "crop", size: 32, crop: 32 },
  kernel: "cubic",
  mean: CLIP_MEAN,
  std: CLIP_STD,
};

async function jpeg(width: number, height: number, colour: string): Promise<Uint8Array> {
  return new Uint8Array(
    await sharp({ create: { width, height, channels: 3, background: colour } }).jpeg().toBuffer(),
  );
}

Deno.test("image pool: jobs run on at most `threads` threads and come back as tensors", async () => {
  const pool = new ImagePool({ threads: 2, maxQueue: 16, limits: { maxPixels: 1e7 } });
  try {
    assert.deepEqual(pool.status(), { threads: 2, started: 0, busy: 0, queue_depth: 0 });
    const bytes = await jpeg(300, 200, "#ff0000");
    const jobs = Array.from({ length: 6 }, () => pool.prepare(bytes, "jpeg", SPEC));
    const s = pool.status();
    assert.equal(s.started, 2);
    assert.equal(s.busy, 2);
    assert.equal(s.queue_depth, 4);
    const results = await Promise.all(jobs);
    for (const r of results) {
      assert.equal(r.image.data.length, 3 * 32 * 32);
      // The tensor owns its buffer (it came back transferred, not as a view of something larger).
      assert.equal(r.image.data.buffer.byteLength, 3 * 32 * 32 * 4);
      assert.deepEqual(r.image.original, { width: 300, height: 200 });
      assert.ok(r.image.data[0] > 1.5, "red channel of a red image is high");
    }
    // The caller's bytes stay usable: the pool transferred a copy.
    assert.equal(bytes[0], 0xff);
    assert.deepEqual(pool.status(), { threads: 2, started: 2, busy: 0, queue_depth: 0 });
  } finally {
    await pool.close();
  }
});

Deno.test("image pool: a full queue answers QUEUE_FULL at once; aborted jobs leave the queue", async () => {
  const pool = new ImagePool({ threads: 1, maxQueue: 2, limits: { maxPixels: 1e7 } });
  try {
    const bytes = await jpeg(800, 600, "#00ff00");
    const first = pool.prepare(bytes, "jpeg", SPEC); // running
    const stop = new AbortController();
    const second = pool.prepare(bytes, "jpeg", SPEC, stop.signal); // waiting
    const third = pool.prepare(bytes, "jpeg", SPEC); // waiting
    await assert.rejects(
      () => pool.prepare(bytes, "jpeg", SPEC),
      (e: unknown) => e instanceof ServiceError && e.code === "QUEUE_FULL",
    );
    assert.equal(pool.status().queue_depth, 2);
    stop.abort(new Error("client went away"));
    await assert.rejects(second, /client went away/);
    assert.equal(pool.status().queue_depth, 1);
    await Promise.all([first, third]);
  } finally {
    await pool.close();
  }
});

Deno.test("image pool: a bad image is a rejection and the pool keeps serving", async () => {
  const pool = new ImagePool({ threads: 1, maxQueue: 4, limits: { maxPixels: 1e7 } });
  try {
    await assert.rejects(
      () => pool.prepare(new TextEncoder().encode("not an image"), undefined, SPEC),
      (e: unknown) =>
        e instanceof ImageJobError && e.kind === "rejected" && /not a JPEG/.test(e.message),
    );
    const ok = await pool.prepare(await jpeg(10, 10, "#0000ff"), "jpeg", SPEC);
    assert.equal(ok.image.width, 32);
  } finally {
    await pool.close();
  }
});

Deno.test("image pool: close fails waiting jobs", async () => {
  const pool = new ImagePool({ threads: 1, maxQueue: 4, limits: { maxPixels: 1e7 } });
  const bytes = await jpeg(400, 400, "#123456");
  const running = pool.prepare(bytes, "jpeg", SPEC);
  const waiting = pool.prepare(bytes, "jpeg", SPEC);
  await pool.close();
  await assert.rejects(
    running,
    (e: unknown) => e instanceof ServiceError && e.code === "SHUTTING_DOWN",
  );
  await assert.rejects(
    waiting,
    (e: unknown) => e instanceof ServiceError && e.code === "SHUTTING_DOWN",
  );
  await assert.rejects(() => pool.prepare(bytes, "jpeg", SPEC), /shutting down/);
});
