/** Detection decoding against boxes and scores computed by hand. */
import assert from "node:assert/strict";
import { decodeClosedSet, decodeOpenSet, pixelBox } from "#worker/families/vision/boxes.ts";

const IMAGE = { width: 640, height: 480 };

Deno.test("boxes: centre boxes become integer corners of the original image, clipped to it", () => {
  // cx 0.5, cy 0.5, w 0.25, h 0.5 on 640×480: x 240..400, y 120..360.
  assert.deepEqual(pixelBox(0.5, 0.5, 0.25, 0.5, IMAGE, IMAGE), [240, 120, 160, 240]);
  // Rounding to the nearest pixel: x0 = (0.1 - 0.05) × 640 = 32, x1 = 0.15 × 640 = 96;
  // y0 = (0.3 - 0.0005) × 480 = 143.76 → 144, y1 = 0.3005 × 480 = 144.24 → 144 (zero height).
  assert.deepEqual(pixelBox(0.1, 0.3, 0.1, 0.001, IMAGE, IMAGE), [32, 144, 64, 0]);
  // A box past the edges is clipped: x -64..192 → 0..192, y 432..528 → 432..480.
  assert.deepEqual(pixelBox(0.1, 1.0, 0.4, 0.2, IMAGE, IMAGE), [0, 432, 192, 48]);
  // OWLv2: coordinates span the padded 640×640 square; y is scaled by 640, clipped at 480.
  assert.deepEqual(pixelBox(0.5, 0.75, 0.5, 0.5, { width: 640, height: 640 }, IMAGE), [
    160,
    320,
    320,
    160,
  ]);
});

Deno.test("boxes: closed set: softmax over all classes, no-object dropped, threshold, sorted", () => {
  // Three queries, classes [N/A, cat, dog, no-object].
  const logits = new Float32Array([
    0,
    3,
    1,
    0, // cat: e^3 / (1 + e^3 + e + 1) = 20.0855 / 24.8038 = 0.80977
    0,
    0,
    0,
    5, // no object wins: best real class has e^0 / (3 + e^5) = 0.00662
    0,
    1,
    4,
    1, // dog: e^4 / (1 + e + e^4 + e) = 54.598 / 61.035 = 0.89454
  ]);
  const boxes = new Float32Array([
    0.5,
    0.5,
    0.25,
    0.5,
    0.1,
    0.1,
    0.1,
    0.1,
    0.25,
    0.25,
    0.5,
    0.5,
  ]);
  const labels = ["N/A", "cat", "dog"];
  const found = decodeClosedSet(
    { logits, boxes, queries: 3, classes: 4 },
    (i) => labels[i],
    0.5,
    IMAGE,
    IMAGE,
  );
  assert.deepEqual(found.map((o) => [o.label, o.bbox]), [
    ["dog", [0, 0, 320, 240]],
    ["cat", [240, 120, 160, 240]],
  ]);
  assert.ok(Math.abs(found[0].score - 0.89454) < 1e-4);
  assert.ok(Math.abs(found[1].score - 0.80977) < 1e-4);
  // A higher threshold keeps only the dog; the no-object query never appears.
  const strict = decodeClosedSet(
    { logits, boxes, queries: 3, classes: 4 },
    (i) => labels[i],
    0.85,
    IMAGE,
    IMAGE,
  );
  assert.deepEqual(strict.map((o) => o.label), ["dog"]);
  const all = decodeClosedSet(
    { logits, boxes, queries: 3, classes: 4 },
    (i) => labels[i],
    0,
    IMAGE,
    IMAGE,
  );
  assert.equal(all.length, 3);
  assert.ok(all.every((o) => o.label !== "no-object"));
});

Deno.test("boxes: open vocabulary: best query per box, sigmoid, threshold, labels echo the queries", () => {
  // Two boxes, queries ["a cat", "a remote"]: logits [boxes, queries].
  const logits = new Float32Array([
    -1,
    2, // box 0: "a remote", sigmoid(2) = 0.88080
    -3,
    -2.5, // box 1: "a remote", sigmoid(-2.5) = 0.07586
  ]);
  const boxes = new Float32Array([0.5, 0.5, 0.5, 0.5, 0.2, 0.2, 0.1, 0.1]);
  const found = decodeOpenSet(
    { logits, boxes, queries: 2, classes: 2 },
    ["a cat", "a remote"],
    0.1,
    IMAGE,
    IMAGE,
  );
  assert.equal(found.length, 1);
  assert.equal(found[0].label, "a remote");
  assert.ok(Math.abs(found[0].score - 0.88080) < 1e-4);
  assert.deepEqual(found[0].bbox, [160, 120, 320, 240]);
  const loose = decodeOpenSet(
    { logits, boxes, queries: 2, classes: 2 },
    ["a cat", "a remote"],
    0.05,
    IMAGE,
    IMAGE,
  );
  assert.deepEqual(loose.map((o) => o.bbox), [[160, 120, 320, 240], [96, 72, 64, 48]]);
});
