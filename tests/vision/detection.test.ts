/**
 * fixture/detr and fixture/owlvit end to end over HTTP (JSON and msgpack): the objects equal a
 * direct run of the fixture graph on the same prepared image, decoded here; boxes are integer
 * pixels of the original image; the request rules (one image per item, labels, threshold,
 * instruction, text items) answer 400.
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
import { base64, fixtureConfig, fixtureFile, picture, postMsgpack } from "./helpers.ts";
import { DETR_LABELS } from "@svc/fixture-models/models";

interface Obj {
  label: string;
  score: number;
  bbox: number[];
}

function box(
  b: ArrayLike<number>,
  frame: { width: number; height: number },
  img: { width: number; height: number },
): number[] {
  const [cx, cy, w, h] = Array.from(b);
  const clip = (v: number, max: number) => Math.min(max, Math.max(0, Math.round(v)));
  const x0 = clip((cx - w / 2) * frame.width, img.width);
  const y0 = clip((cy - h / 2) * frame.height, img.height);
  return [
    x0,
    y0,
    clip((cx + w / 2) * frame.width, img.width) - x0,
    clip((cy + h / 2) * frame.height, img.height) - y0,
  ];
}

/** DETR objects of one image: the graph run alone on it, softmax, no-object dropped. */
async function expectedDetr(bytes: Uint8Array, threshold: number): Promise<Obj[]> {
  const img = await prepareImage(bytes, undefined, imageSpecOf(await fixtureConfig("detr"))!, {
    maxPixels: 1e8,
  });
  const m = await openModel(await Deno.readFile(await fixtureFile("detr", "onnx/model.onnx")));
  const out = await runModel(m, {
    pixel_values: { type: "float32", dims: [1, 3, img.height, img.width], data: img.data },
    pixel_mask: {
      type: "int64",
      dims: [1, img.height, img.width],
      data: new Array(img.width * img.height).fill(1),
    },
  });
  await m.session.release();
  const [, Q, C] = out.logits.dims;
  const objects: Obj[] = [];
  for (let q = 0; q < Q; q++) {
    const row = Array.from(out.logits.data.slice(q * C, (q + 1) * C));
    const exp = row.map((v) => Math.exp(v));
    const total = exp.reduce((a, b) => a + b, 0);
    const probs = exp.slice(0, C - 1).map((e) => e / total);
    const best = probs.indexOf(Math.max(...probs));
    if (probs[best] > threshold) {
      objects.push({
        label: DETR_LABELS[best],
        score: probs[best],
        bbox: box(out.pred_boxes.data.slice(q * 4, q * 4 + 4), img.frame, img.original),
      });
    }
  }
  return objects.sort((a, b) => b.score - a.score);
}

/** OWL objects of one image for `queries`: sigmoid of the best query per box. */
async function expectedOwl(
  bytes: Uint8Array,
  queries: string[],
  threshold: number,
): Promise<Obj[]> {
  const img = await prepareImage(bytes, undefined, imageSpecOf(await fixtureConfig("owlvit"))!, {
    maxPixels: 1e8,
  });
  const m = await openModel(await Deno.readFile(await fixtureFile("owlvit", "onnx/model.onnx")));
  const text = textFeeds(fixtureTokenizer(), queries, false);
  const out = await runModel(m, {
    input_ids: text.input_ids,
    attention_mask: text.attention_mask,
    pixel_values: { type: "float32", dims: [1, 3, img.height, img.width], data: img.data },
  });
  await m.session.release();
  const [, P, Q] = out.logits.dims;
  const objects: Obj[] = [];
  for (let p = 0; p < P; p++) {
    const row = Array.from(out.logits.data.slice(p * Q, (p + 1) * Q));
    const best = row.indexOf(Math.max(...row));
    const score = 1 / (1 + Math.exp(-row[best]));
    if (score > threshold) {
      objects.push({
        label: queries[best],
        score,
        bbox: box(out.pred_boxes.data.slice(p * 4, p * 4 + 4), img.frame, img.original),
      });
    }
  }
  return objects.sort((a, b) => b.score - a.score);
}

function assertObjects(got: Obj[], want: Obj[], what: string): void {
  assert.deepEqual(got.map((o) => [o.label, o.bbox]), want.map((o) => [o.label, o.bbox]), what);
  got.forEach((o, i) => assert.ok(Math.abs(o.score - want[i].score) < 1e-4, `${what}: score ${i}`));
  for (let i = 1; i < got.length; i++) {
    assert.ok(got[i - 1].score >= got[i].score, `${what}: sorted`);
  }
}

async function expectBadRequest(
  w: TestWorker,
  path: string,
  body: Json,
  pattern: RegExp,
): Promise<void> {
  const r = await postJson(`${w.url}${path}`, body);
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.detail.code, "INVALID_INPUT");
  assert.match(r.body.detail.message, pattern);
}

const DETR = "/v1/extract/fixture/detr";
const OWL = "/v1/extract/fixture/owlvit";

Deno.test("detr: objects over JSON and msgpack equal the graph's own decoding, boxes in original pixels", async () => {
  // Two sizes: the worker pads them into one batch (the mask keeps the answers per image).
  const wide = await picture(320, 200, "jpeg", 1);
  const tall = await picture(150, 260, "png", 2);
  const threshold = 0.3;
  const want = [await expectedDetr(wide, threshold), await expectedDetr(tall, threshold)];
  assert.ok(want[0].length + want[1].length > 0, "the fixture finds something at this threshold");
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${DETR}`, {
      items: [
        { id: "wide", images: [{ data: base64(wide), format: "jpeg" }] },
        { id: "tall", images: [{ data: base64(tall), format: "png" }] },
      ],
      params: { options: { threshold } },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.items.map((it: Json) => it.id), ["wide", "tall"]);
    assertObjects(r.body.items[0].objects, want[0], "wide");
    assertObjects(r.body.items[1].objects, want[1], "tall");
    for (const o of r.body.items[1].objects) {
      assert.ok(o.bbox.every(Number.isInteger));
      assert.ok(o.bbox[0] + o.bbox[2] <= 150 && o.bbox[1] + o.bbox[3] <= 260, "inside the image");
    }
    assert.ok(r.body.timing.tokenization_ms > 0);
    const mp = await postMsgpack(`${w.url}${DETR}`, {
      items: [{ images: [{ data: tall, format: "png" }] }],
      params: { options: { threshold } },
    });
    assert.equal(mp.status, 200, JSON.stringify(mp.body));
    assertObjects(mp.body.items[0].objects, want[1], "msgpack");
    // The catalog default threshold (0.5 for the fixture) applies without options.
    const plain = await postJson(`${w.url}${DETR}`, {
      items: [{ images: [{ data: base64(wide) }] }],
    });
    assertObjects(plain.body.items[0].objects, await expectedDetr(wide, 0.5), "default threshold");
    // params.labels keeps only those classes.
    const some = await postJson(`${w.url}${DETR}`, {
      items: [{ images: [{ data: base64(wide) }] }],
      params: { labels: ["CAT", "dog"], options: { threshold } },
    });
    assertObjects(
      some.body.items[0].objects,
      want[0].filter((o) => o.label === "cat" || o.label === "dog"),
      "labels",
    );
  });
});

Deno.test("owlvit: the labels are the queries; JSON and msgpack equal the graph's own decoding", async () => {
  const img = await picture(300, 180, "webp", 3);
  const queries = ["a photo of a cat", "a red car", "dog"];
  const threshold = 0.1;
  const want = await expectedOwl(img, queries, threshold);
  assert.ok(want.length > 0, "the fixture finds something at this threshold");
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}${OWL}`, {
      items: [{ id: "a", images: [{ data: base64(img), format: "webp" }] }, {
        id: "b",
        images: [{ data: base64(img) }],
      }],
      params: { labels: queries },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assertObjects(r.body.items[0].objects, want, "json");
    assertObjects(r.body.items[1].objects, want, "same image, same objects");
    for (const o of r.body.items[0].objects) assert.ok(queries.includes(o.label));
    const mp = await postMsgpack(`${w.url}${OWL}`, {
      items: [{ images: [{ data: img }] }],
      params: { labels: queries, options: { threshold: 0.3 } },
    });
    assert.equal(mp.status, 200, JSON.stringify(mp.body));
    assertObjects(
      mp.body.items[0].objects,
      want.filter((o) => o.score > 0.3),
      "msgpack, threshold 0.3",
    );
  });
});

Deno.test("detection: request rules are 400s naming what the model accepts", async () => {
  const img = { data: base64(await picture(80, 60, "jpeg")) };
  await withFakeBackendWorker(async (w) => {
    await expectBadRequest(
      w,
      DETR,
      { items: [{ text: "a cat" }] },
      /items\[0\] has text; model 'fixture\/detr' reads images only/,
    );
    await expectBadRequest(
      w,
      DETR,
      { items: [{ images: [img, img] }] },
      /items\[0\] has 2 images; model 'fixture\/detr' reads one image per item/,
    );
    await expectBadRequest(w, DETR, {
      items: [{ images: [img] }],
      params: { instruction: "find cats" },
    }, /cannot apply params.instruction/);
    await expectBadRequest(w, DETR, {
      items: [{ images: [img] }],
      params: { options: { threshold: 2 } },
    }, /options.threshold must be a number from 0 to 1/);
    await expectBadRequest(
      w,
      OWL,
      { items: [{ images: [img] }] },
      /params.labels must list at least one/,
    );
    await expectBadRequest(w, OWL, {
      items: [{ images: [img] }],
      params: { labels: Array.from({ length: 33 }, (_, i) => `thing ${i}`) },
    }, /params.labels has 33 labels; at most 32/);
    await expectBadRequest(
      w,
      "/v1/encode/fixture/detr",
      { items: [{ images: [img] }] },
      /detection model: use \/v1\/extract\//,
    );
    await expectBadRequest(
      w,
      "/v1/extract/fixture/ner",
      { items: [{ images: [img] }] },
      /items\[0\] has images; model 'fixture\/ner' reads text only/,
    );
    const info = await (await fetch(`${w.url}/v1/models/fixture/owlvit`)).json();
    assert.deepEqual([info.inputs, info.outputs], [["image"], ["objects"]]);
  });
});
