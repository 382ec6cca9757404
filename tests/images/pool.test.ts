/**
 * The image pool: images are prepared on pool threads (at most SVC_IMAGE_WORKERS at once), the
 * queue is bounded, waiting jobs leave when their request goes away, and bad images come back as
 * rejections while the pool keeps serving. Requests share the threads (issue 23.3): one request
 * never holds every thread, waiting requests take turns, and a decode that overruns its time
 * fails at once while its thread is set aside and replaced.
 */
import assert from "node:assert/strict";
import sharp from "sharp";
import { ServiceError } from "@svc/shared/errors";
import { ImageJobError, ImagePool, type ImagePoolOptions } from "#worker/images/pool.ts";
import { waitFor } from "../helpers/wait.ts";
import { scanBombJpeg } from "./bombs.ts";
import { CLIP_MEAN, CLIP_STD, type ImageSpec } from "#worker/images/spec.ts";

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
  const pool = new ImagePool({
    threads: 2,
    perRequest: 2,
    maxQueue: 16,
    limits: { maxPixels: 1e7 },
  });
  try {
    assert.deepEqual(pool.status(), {
      threads: 2,
      started: 0,
      busy: 0,
      queue_depth: 0,
      abandoned: 0,
    });
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
    assert.deepEqual(pool.status(), {
      threads: 2,
      started: 2,
      busy: 0,
      queue_depth: 0,
      abandoned: 0,
    });
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
    const second = pool.prepare(bytes, "jpeg", SPEC, { signal: stop.signal }); // waiting
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

/** A JPEG that takes well over a second to decode here (1,000 repeated scans of 3000×3000). */
const slowJpeg = scanBombJpeg(3000, 3000, 1_000);
/**
 * Slow enough that a 64×64 image decodes long before it (a quarter of the pixels of `slowJpeg`,
 * so three of them do not cost seconds of CPU).
 */
const slowishJpeg = scanBombJpeg(1500, 1500, 1_000);
/** Limits that let the slow JPEG through to the decoder. */
const SLOW_OK = { maxPixels: 1e8, maxJpegScans: 10_000 };

function pool(opts: Partial<ImagePoolOptions>): ImagePool {
  return new ImagePool({ threads: 1, maxQueue: 64, limits: SLOW_OK, ...opts });
}

Deno.test("image pool: one request cannot take every thread; another request starts at once", async () => {
  const p = pool({ threads: 3 });
  try {
    const slow = await slowishJpeg;
    const a = {};
    const big = Array.from({ length: 3 }, () => p.prepare(slow, "jpeg", SPEC, { owner: a }));
    // By default a request runs on one thread fewer than the pool has.
    assert.deepEqual([p.status().busy, p.status().queue_depth], [2, 1]);
    const small = p.prepare(await jpeg(64, 64, "#00ff00"), "jpeg", SPEC, { owner: {} });
    assert.deepEqual([p.status().busy, p.status().queue_depth], [3, 1]);
    let bigDone = 0;
    big.forEach((j) => j.then(() => bigDone++));
    await small;
    assert.ok(bigDone < 3, "the small request did not wait for the large one");
    await Promise.all(big);
  } finally {
    await p.close();
  }
});

Deno.test("image pool: waiting requests take turns", async () => {
  const p = pool({ threads: 1 });
  try {
    const bytes = await jpeg(200, 200, "#0000ff");
    const order: string[] = [];
    const run = (name: string, owner: object) =>
      p.prepare(bytes, "jpeg", SPEC, { owner }).then(() => order.push(name));
    const a = {};
    const b = {};
    const jobs = [run("a1", a), run("a2", a), run("a3", a), run("b1", b), run("b2", b)];
    await Promise.all(jobs);
    // One thread: the finishing order is the starting order. First come first served would be
    // a1 a2 a3 b1 b2.
    assert.deepEqual(order, ["a1", "b1", "a2", "b2", "a3"]);
  } finally {
    await p.close();
  }
});

Deno.test("image pool: a decode past its time fails at once; its thread is set aside and replaced", async () => {
  const p = pool({ threads: 1, decodeTimeoutMs: 300 });
  const abandoned: number[] = [];
  try {
    const slow = await slowJpeg;
    const small = await jpeg(64, 64, "#ff00ff");
    // Two slow images of two requests, then a small one: the first overruns and is replaced, the
    // second overruns on the replacement; with the pool's one thread and two set aside, the small
    // image waits for a set-aside decode to end, then is served.
    const first = p.prepare(slow, "jpeg", SPEC, { owner: {} });
    const second = p.prepare(slow, "jpeg", SPEC, { owner: {} });
    const third = p.prepare(small, "jpeg", SPEC, { owner: {} });
    for (const job of [first, second]) {
      await assert.rejects(job, (e: unknown) => {
        assert.ok(e instanceof ImageJobError && e.kind === "rejected", String(e));
        assert.match(
          e.message,
          /took more than 300 ms to decode; the limit is 300 ms \(SVC_IMAGE_DECODE_TIMEOUT_MS\)/,
        );
        return true;
      });
      abandoned.push(p.status().abandoned);
    }
    assert.deepEqual(abandoned, [1, 2]);
    assert.equal(p.status().started, 0, "no third thread while two are set aside");
    const served = await third;
    assert.equal(served.image.width, 32);
    // Set-aside threads close once their decode ends.
    await waitFor(() => p.status().abandoned === 0, "set-aside threads closed", 30_000);
  } finally {
    await p.close();
  }
});
