/** Response encoding: content negotiation, msgpack forms, JSON lists, round trips. */
import assert from "node:assert/strict";
import { Unpackr } from "msgpackr/unpack";
import { encodeAs, encodeResponse } from "@svc/shared/codec/encode";
import { encodeJson } from "#shared/codec/json_encode.ts";
import { encodeMsgpack } from "#shared/codec/msgpack_encode.ts";
import { NdArray } from "#shared/codec/ndarray.ts";
import { negotiate } from "#shared/codec/negotiate.ts";
import { decodeMsgpackResponse } from "../helpers/msgpack_response.ts";
import { makeDenseVector, makeMultiVector, makeSparseVector } from "@svc/shared/codec/output_dtype";
import { type EncodeResponse, EncodeResponseSchema } from "@svc/shared/schemas/encode";

const plain = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" });
const hex = (b: Uint8Array): string =>
  Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

Deno.test("negotiate: msgpack unless Accept has application/json and no msgpack type", () => {
  assert.equal(negotiate(null), "msgpack");
  assert.equal(negotiate(undefined), "msgpack");
  assert.equal(negotiate(""), "msgpack");
  assert.equal(negotiate("*/*"), "msgpack");
  assert.equal(negotiate("application/msgpack"), "msgpack");
  assert.equal(negotiate("text/html"), "msgpack");
  assert.equal(negotiate("application/json"), "json");
  assert.equal(negotiate("Application/JSON; charset=utf-8"), "json");
  assert.equal(negotiate("application/json, */*;q=0.1"), "json");
  assert.equal(negotiate("application/json, application/msgpack"), "msgpack");
  // q-values decide: msgpack refused (q=0) or less wanted than JSON means JSON.
  assert.equal(negotiate("application/msgpack;q=0, application/json"), "json");
  assert.equal(negotiate("application/x-msgpack;q=0.2, application/json;q=0.8"), "json");
  assert.equal(negotiate("application/json;q=0.5, application/msgpack"), "msgpack");
  assert.equal(negotiate("application/json;q=0"), "msgpack");
  assert.equal(negotiate("application/json, */*"), "json");
  assert.equal(negotiate("application/x-msgpack, application/json"), "msgpack");
});

Deno.test("encodeResponse: body type and Content-Type follow the negotiation", () => {
  const v = { a: Float32Array.of(1) };
  const mp = encodeResponse(v, null);
  assert.equal(mp.contentType, "application/msgpack");
  assert.ok(mp.body instanceof Uint8Array);
  const js = encodeResponse(v, "application/json");
  assert.equal(js.contentType, "application/json");
  assert.equal(js.body, '{"a":[1]}');
  assert.deepEqual(encodeAs(v, "json"), js);
});

Deno.test("msgpack: scalars use the smallest int form, other numbers float64", () => {
  const cases: [unknown, string][] = [
    [0, "00"],
    [127, "7f"],
    [128, "cc80"],
    [65535, "cdffff"],
    [65536, "ce00010000"],
    [2 ** 32, "cf0000000100000000"],
    [-1, "ff"],
    [-32, "e0"],
    [-33, "d0df"],
    [-129, "d1ff7f"],
    [-40000, "d2ffff63c0"],
    [-(2 ** 32), "d3ffffffff00000000"],
    [1.5, "cb3ff8000000000000"],
    [2 ** 60, "cb43b0000000000000"], // beyond 2^53: float64 keeps it exact
    [NaN, "cb7ff8000000000000"],
    [null, "c0"],
    [undefined, "c0"],
    [true, "c3"],
    [false, "c2"],
    ["", "a0"],
    ["é", "a2c3a9"],
  ];
  for (const [v, h] of cases) assert.equal(hex(encodeMsgpack(v)), h, String(v));
});

Deno.test("msgpack: string, array, map and bin headers at their size boundaries", () => {
  for (const n of [31, 32, 255, 256, 65535, 65536]) {
    const s = "a".repeat(n);
    assert.equal(plain.unpack(encodeMsgpack(s)), s);
    const u = "ü".repeat(n); // 2 UTF-8 bytes each: exercises the header shift
    assert.equal(plain.unpack(encodeMsgpack(u)), u);
    const arr = Array.from({ length: n }, (_, i) => i % 7);
    assert.deepEqual(plain.unpack(encodeMsgpack(arr)), arr);
  }
  assert.equal(hex(encodeMsgpack("a".repeat(32))).slice(0, 4), "d920");
  const obj = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i]));
  assert.equal(hex(encodeMsgpack(obj)).slice(0, 6), "de0014");
  assert.deepEqual(plain.unpack(encodeMsgpack(obj)), obj);
  // Large vectors switch to bin16 / bin32 data.
  for (const n of [64, 16384]) {
    const v = new Float32Array(n).map((_, i) => i / 3);
    const back = decodeMsgpackResponse(encodeMsgpack(v));
    assert.deepEqual(back, v);
  }
});

Deno.test("msgpack: keys with undefined values are left out; Maps are supported", () => {
  const bytes = encodeMsgpack({ id: undefined, a: 1, m: new Map([["x", 2]]) });
  assert.deepEqual(plain.unpack(bytes), { a: 1, m: { x: 2 } });
});

Deno.test("msgpack: typed arrays that are views into bigger buffers send only their bytes", () => {
  const big = new Float32Array([9, 9, 1, -2, 0.5, 9]);
  const view = big.subarray(2, 5);
  assert.deepEqual(encodeMsgpack(view), encodeMsgpack(Float32Array.of(1, -2, 0.5)));
});

Deno.test("msgpack: a structurally cloned NdArray is still encoded as one numpy map", () => {
  const m = NdArray.matrix(Float32Array.of(1, 2, 3, 4, 5, 6), 2, 3);
  const cloned = structuredClone(m);
  assert.ok(!(cloned instanceof NdArray));
  assert.deepEqual(encodeMsgpack(cloned), encodeMsgpack(m));
  assert.equal(encodeJson(cloned), "[[1,2,3],[4,5,6]]");
});

Deno.test("msgpack: refuses what it cannot represent instead of sending garbage", () => {
  assert.throws(() => encodeMsgpack(new DataView(new ArrayBuffer(4))), /DataView/);
  assert.throws(() => encodeMsgpack(BigInt64Array.of(1n)), /BigInt64Array/);
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  assert.throws(() => encodeMsgpack(cyclic), /too deeply/);
  assert.throws(() => encodeJson(cyclic), /too deeply/);
});

/** A response with every vector kind and dtype. */
function sampleResponse(): EncodeResponse {
  const v = Float32Array.of(0.5, -1, 0.25, 0, 3, -0.125, 2, 1, 1);
  const idx = Int32Array.of(3, 17, 30521);
  const sv = Float32Array.of(0.5, 1.25, 2);
  const m = Float32Array.of(1, -1, 0.5, 0, 0, 2);
  return {
    model: "BAAI/bge-m3",
    items: [
      {
        id: "a",
        dense: makeDenseVector(v),
        sparse: makeSparseVector(250002, idx, sv),
        multivector: makeMultiVector(m, 2, 3),
      },
      {
        dense: makeDenseVector(v, "float16"),
        sparse: makeSparseVector(250002, idx, sv, "float16"),
        multivector: makeMultiVector(m, 2, 3, "float16"),
      },
      { id: "c", dense: makeDenseVector(v, "int8"), multivector: makeMultiVector(m, 2, 3, "int8") },
      {
        id: "d",
        dense: makeDenseVector(v, "binary"),
        multivector: makeMultiVector(m, 2, 3, "binary"),
      },
    ],
    timing: {
      total_ms: 12.25,
      queue_ms: 0.5,
      tokenization_ms: 1,
      inference_ms: 10.75,
      postprocessing_ms: null,
    },
  };
}

Deno.test("round trip: msgpack response decodes back to the same typed values", () => {
  const r = sampleResponse();
  const back = decodeMsgpackResponse(encodeMsgpack(r));
  assert.deepEqual(back, r);
  // And it validates against the response schema.
  assert.ok(EncodeResponseSchema.safeParse(back).success);
  // Item without id: the key is absent on the wire.
  assert.ok(!("id" in (back as EncodeResponse).items[1]));
});

Deno.test("round trip: JSON has plain lists (f16 as numbers, 2-D as list of lists)", () => {
  const out = JSON.parse(encodeJson(sampleResponse()));
  const [a, b, c, d] = out.items;
  assert.deepEqual(a.dense, {
    dims: 9,
    dtype: "float32",
    values: [0.5, -1, 0.25, 0, 3, -0.125, 2, 1, 1],
  });
  assert.deepEqual(a.sparse, {
    dims: 250002,
    dtype: "float32",
    indices: [3, 17, 30521],
    values: [0.5, 1.25, 2],
  });
  assert.deepEqual(a.multivector, {
    token_dims: 3,
    num_tokens: 2,
    dtype: "float32",
    values: [[1, -1, 0.5], [0, 0, 2]],
  });
  assert.deepEqual(b.dense.values, [0.5, -1, 0.25, 0, 3, -0.125, 2, 1, 1]); // exact in f16
  assert.deepEqual(b.multivector.values, [[1, -1, 0.5], [0, 0, 2]]);
  assert.ok(!("id" in b));
  assert.deepEqual(c.dense.values, [21, -42, 11, 0, 127, -5, 85, 42, 42]);
  assert.deepEqual(c.multivector.values, [[127, -127, 64], [0, 0, 127]]);
  assert.deepEqual(d.dense, { dims: 9, dtype: "binary", values: [0xab, 0x80] });
  assert.deepEqual(d.multivector.values, [[0xa0], [0x20]]);
  assert.deepEqual(out.timing, {
    total_ms: 12.25,
    queue_ms: 0.5,
    tokenization_ms: 1,
    inference_ms: 10.75,
    postprocessing_ms: null,
  });
});

Deno.test("JSON: float32 values print as their exact doubles; NaN/Infinity become null", () => {
  assert.equal(encodeJson(Float32Array.of(0.1)), "[0.10000000149011612]");
  assert.equal(encodeJson({ v: Float32Array.of(NaN, Infinity, 1) }), '{"v":[null,null,1]}');
  assert.equal(
    encodeJson(new NdArray(Int32Array.of(1, 2, 3, 4, 5, 6, 7, 8), [2, 2, 2])),
    "[[[1,2],[3,4]],[[5,6],[7,8]]]",
  );
  assert.equal(encodeJson({ a: undefined, b: [undefined], c: 1n }), '{"b":[null],"c":1}');
  const k = JSON.parse(encodeJson(new Map([["__proto__", 1]])));
  assert.equal(Object.keys(k).length, 1);
});
