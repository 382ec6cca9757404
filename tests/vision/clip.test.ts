/**
 * fixture/clip end to end over HTTP: text and image items embed into one space (checked against
 * the fixture's towers run directly), JSON and msgpack, several images per item, score from text
 * to images, the input-kind rules, and every bad-image case answered 400 while the worker keeps
 * serving.
 */
import assert from "node:assert/strict";
import { fixtureTokenizer, openModel, runModel, textFeeds } from "../fixtures/testing.ts";
import { prepareImage } from "#worker/images/decode.ts";
import { imageSpecOf } from "#worker/images/spec.ts";
import {
  type Json,
  postJson,
  type TestWorker,
  withFakeBackendWorker,
  withWorker,
} from "../worker/harness.ts";
import {
  base64,
  fixtureConfig,
  fixtureFile,
  l2,
  ndFloat32,
  picture,
  postMsgpack,
} from "./helpers.ts";

const URL_PATH = "/v1/encode/fixture/clip";

/** The image vector the worker should give: our preprocessing, the vision graph run directly. */
async function expectedImage(bytes: Uint8Array): Promise<Float32Array> {
  const spec = imageSpecOf(await fixtureConfig("clip"))!;
  const img = await prepareImage(bytes, undefined, spec, { maxPixels: 1e8 });
  const m = await openModel(
    await Deno.readFile(await fixtureFile("clip", "onnx/vision_model.onnx")),
  );
  const out = await runModel(m, {
    pixel_values: { type: "float32", dims: [1, 3, img.height, img.width], data: img.data },
  });
  await m.session.release();
  return l2(out.image_embeds.data);
}

/** The text vector: the text graph on the text's ids. */
async function expectedText(text: string): Promise<Float32Array> {
  const m = await openModel(await Deno.readFile(await fixtureFile("clip", "onnx/text_model.onnx")));
  const feeds = textFeeds(fixtureTokenizer(), [text], false);
  const out = await runModel(m, { input_ids: feeds.input_ids });
  await m.session.release();
  return l2(out.text_embeds.data);
}

function assertClose(
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  what: string,
  tol = 1e-4,
): void {
  assert.equal(got.length, want.length, what);
  for (let i = 0; i < got.length; i++) {
    assert.ok(Math.abs(got[i] - want[i]) < tol, `${what}[${i}]: ${got[i]} vs ${want[i]}`);
  }
}

function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

async function expectBadRequest(
  w: TestWorker,
  body: Json,
  pattern: RegExp,
  path = URL_PATH,
): Promise<void> {
  const r = await postJson(`${w.url}${path}`, body);
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.detail.code, "INVALID_INPUT");
  assert.match(r.body.detail.message, pattern);
}

Deno.test("clip: text and images (JPEG, PNG, WebP) in one JSON request embed into one space", async () => {
  const jpeg = await picture(320, 240, "jpeg", 1);
  const png = await picture(200, 300, "png", 2);
  const webp = await picture(64, 64, "webp", 3);
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${URL_PATH}`, {
      items: [
        { id: "t", text: "a photo of a red car" },
        { id: "j", images: [{ data: base64(jpeg), format: "jpeg" }] },
        { id: "p", images: [{ data: base64(png), format: "png" }] },
        { id: "w", images: [{ data: base64(webp) }] },
      ],
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const vectors = r.body.items.map((it: Json) => it.dense.values as number[]);
    assert.deepEqual(r.body.items.map((it: Json) => [it.id, it.dense.dims]), [
      ["t", 32],
      ["j", 32],
      ["p", 32],
      ["w", 32],
    ]);
    for (const v of vectors) assert.ok(Math.abs(dot(v, v) - 1) < 1e-5, "L2-normalised");
    assertClose(vectors[0], await expectedText("a photo of a red car"), "text");
    assertClose(vectors[1], await expectedImage(jpeg), "jpeg");
    assertClose(vectors[2], await expectedImage(png), "png");
    assertClose(vectors[3], await expectedImage(webp), "webp");
    // Image preparation counts as preprocessing time.
    assert.ok(r.body.timing.tokenization_ms > 0);
    assert.ok(Number(r.headers.get("x-tokenization-time")) > 0);
  });
});

Deno.test("clip: msgpack request with raw image bytes; several images in one item give their mean", async () => {
  const a = await picture(120, 90, "jpeg", 4);
  const b = await picture(90, 120, "png", 5);
  await withWorker(async (w) => {
    const r = await postMsgpack(`${w.url}${URL_PATH}`, {
      items: [
        { id: "a", images: [{ data: a, format: "jpeg" }] },
        { id: "ab", images: [{ data: a, format: "jpeg" }, { data: b, format: "png" }] },
      ],
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.headers.get("content-type"), "application/msgpack");
    const va = ndFloat32(r.body.items[0].dense.values);
    const vab = ndFloat32(r.body.items[1].dense.values);
    const ea = await expectedImage(a);
    const eb = await expectedImage(b);
    assertClose(va, ea, "a");
    assertClose(vab, l2(ea.map((x, i) => x + eb[i])), "mean of a and b");
  });
});

Deno.test("clip: score ranks images against a text query by cosine (text→image search in one call)", async () => {
  const images = await Promise.all([0, 1, 2].map((h) => picture(100, 80, "jpeg", 10 + h)));
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}/v1/score/fixture/clip`, {
      query: { id: "q", text: "a dog on the beach" },
      items: images.map((img, i) => ({
        id: `img${i}`,
        images: [{ data: base64(img), format: "jpeg" }],
      })),
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const q = await expectedText("a dog on the beach");
    const want = await Promise.all(images.map(async (img) => dot(q, await expectedImage(img))));
    assert.equal(r.body.query_id, "q");
    const order = want.map((s, i) => [s, i]).sort((x, y) => y[0] - x[0]).map(([, i]) => `img${i}`);
    assert.deepEqual(r.body.scores.map((s: Json) => s.item_id), order);
    for (const s of r.body.scores) {
      assert.ok(Math.abs(s.score - want[Number(s.item_id.slice(3))]) < 1e-4);
    }
    // And the other way round: an image query over texts.
    const back = await postJson(`${w.url}/v1/score/fixture/clip`, {
      query: { images: [{ data: base64(images[0]) }] },
      items: [{ text: "a dog" }, { text: "a cat" }],
    });
    assert.equal(back.status, 200, JSON.stringify(back.body));
    assert.equal(back.body.scores.length, 2);
  });
});

Deno.test("clip: input kinds: text+image in one item, images on a text model, images on a reranker", async () => {
  const img = base64(await picture(40, 40, "png"));
  await withWorker(async (w) => {
    await expectBadRequest(
      w,
      { items: [{ text: "x", images: [{ data: img }] }] },
      /items\[0\] has both text and images; model 'fixture\/clip' embeds each on its own/,
    );
    await expectBadRequest(
      w,
      { items: [{ text: "x" }, { images: [{ data: img }] }] },
      /items\[1\] has images; model 'fixture\/dense' reads text only/,
      "/v1/encode/fixture/dense",
    );
    await expectBadRequest(
      w,
      { query: { text: "x" }, items: [{ images: [{ data: img }] }] },
      /items\[0\] has images; model 'fixture\/reranker' reads text only/,
      "/v1/score/fixture/reranker",
    );
    const info = await (await fetch(`${w.url}/v1/models/fixture/clip`)).json();
    assert.deepEqual(info.inputs, ["text", "image"]);
  });
});

Deno.test("clip: every bad image is a 400 naming the item and image; the worker keeps serving", async () => {
  const good = await picture(64, 48, "png");
  const jpeg = await picture(64, 48, "jpeg");
  const huge = new Uint8Array(good);
  // Claim 20000×20000 in the PNG header (the CRC is checked by the decoder, so it is fixed too).
  const view = new DataView(huge.buffer);
  view.setUint32(16, 20000);
  view.setUint32(20, 20000);
  let c = ~0;
  for (const byte of huge.subarray(12, 29)) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  view.setUint32(29, ~c >>> 0);
  const cases: [string, Json, RegExp][] = [
    ["corrupt", {
      data: base64(new Uint8Array([0xff, 0xd8, 0xff, ...new Uint8Array(500).fill(7)])),
    }, /items\[1\]\.images\[0\] cannot be decoded/],
    [
      "truncated",
      { data: base64(jpeg.subarray(0, jpeg.length >> 1)), format: "jpeg" },
      /items\[1\]\.images\[0\] cannot be decoded/,
    ],
    [
      "mislabelled",
      { data: base64(good), format: "webp" },
      /items\[1\]\.images\[0\] has format 'webp' but its bytes are a png image/,
    ],
    [
      "oversized",
      { data: base64(huge), format: "png" },
      /items\[1\]\.images\[0\] is 20000×20000 = 400000000 pixels/,
    ],
    [
      "not an image",
      { data: base64(new TextEncoder().encode("just some text")) },
      /items\[1\]\.images\[0\] is not a JPEG, PNG or WebP image/,
    ],
  ];
  await withFakeBackendWorker(async (w) => {
    for (const [name, image, pattern] of cases) {
      const r = await postJson(`${w.url}${URL_PATH}`, {
        items: [{ images: [{ data: base64(good) }] }, { images: [image] }],
      });
      assert.equal(r.status, 400, `${name}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.detail.code, "INVALID_INPUT", name);
      assert.match(r.body.detail.message, pattern, name);
      const ok = await postJson(`${w.url}${URL_PATH}`, {
        items: [{ images: [{ data: base64(good) }] }],
      });
      assert.equal(ok.status, 200, `serving after ${name}`);
    }
    // The pool shows up in the status message.
    const status = await w.instance.status.snapshot();
    assert.equal(status.images.threads, 2);
    assert.equal(status.images.queue_depth, 0);
  }, { SVC_IMAGE_WORKERS: "2" });
});

Deno.test("clip: image limits (bytes, per item, per request) are settings, checked before decoding", async () => {
  const img = await picture(64, 48, "jpeg");
  const one = { data: base64(img), format: "jpeg" };
  await withWorker(async (w) => {
    await expectBadRequest(
      w,
      { items: [{ images: [one, one, one] }] },
      /items\[0\] has 3 images; the limit is 2 \(SVC_MAX_IMAGES_PER_ITEM\)/,
    );
    await expectBadRequest(
      w,
      { items: [{ images: [one, one] }, { images: [one, one] }] },
      /the request has 4 images; the limit is 3 \(SVC_MAX_IMAGES_PER_REQUEST\)/,
    );
    await expectBadRequest(w, {
      items: [{ images: [{ data: base64(await picture(400, 300, "png")) }] }],
    }, /items\[0\]\.images\[0\] is \d+ bytes; the limit is 20000 \(SVC_MAX_IMAGE_BYTES\)/);
    await expectBadRequest(w, {
      items: [{ images: [{ data: base64(await picture(120, 100, "jpeg")) }] }],
    }, /120×100 = 12000 pixels; the limit is 10000 \(SVC_MAX_IMAGE_PIXELS\)/);
  }, {
    SVC_MAX_IMAGES_PER_ITEM: "2",
    SVC_MAX_IMAGES_PER_REQUEST: "3",
    SVC_MAX_IMAGE_BYTES: "20000",
    SVC_MAX_IMAGE_PIXELS: "10000",
  });
});
