/**
 * Golden-byte tests of the msgpack response encoding (docs/api.md "Arrays on the wire").
 * The files in ./golden/ were written once by ./golden/make_golden.ts from hand-assembled hex
 * (derivations are commented there); here the encoder must reproduce them exactly.
 */
import assert from "node:assert/strict";
import { Unpackr } from "msgpackr/unpack";
import { encodeMsgpack } from "#shared/codec/msgpack_encode.ts";
import { NdArray } from "#shared/codec/ndarray.ts";
import { float32ToFloat16, packBits, quantizeInt8, quantizeUint8 } from "@svc/shared/codec/float16";
import { makeDenseVector, makeMultiVector } from "@svc/shared/codec/output_dtype";

const golden = (name: string): Promise<Uint8Array> =>
  Deno.readFile(new URL(`./golden/${name}`, import.meta.url));

const hex = (b: Uint8Array): string =>
  Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

/** The example printed in docs/api.md, copied verbatim (spaces removed). */
const WIRE_MD_EXAMPLE = (
  "85 c4026e64 c3 c40474797065 a33c6634 c4046b696e64 c400 c4057368617065 9103 c40464617461 c40c " +
  "0000803f000000c0 0000003f"
).replaceAll(" ", "");

Deno.test("golden: float32 [1,-2,0.5] matches docs/api.md byte for byte", async () => {
  const bytes = encodeMsgpack(new Float32Array([1.0, -2.0, 0.5]));
  assert.equal(hex(bytes), WIRE_MD_EXAMPLE);
  assert.deepEqual(bytes, await golden("f32_wire_example.msgpack"));
});

Deno.test("golden: float16 via float32ToFloat16", async () => {
  const v = float32ToFloat16(new Float32Array([1.0, -2.0, 0.5, 65504]));
  assert.deepEqual(encodeMsgpack(v), await golden("f16.msgpack"));
});

Deno.test("golden: int8 via quantizeInt8", async () => {
  const v = quantizeInt8(new Float32Array([0.5, -1.0, 0.25, 0.0]));
  assert.deepEqual(encodeMsgpack(v), await golden("i8.msgpack"));
});

Deno.test("golden: int8 rounds exact halves to even (numpy), not half up", async () => {
  const v = quantizeInt8(new Float32Array([254, 125, -125, 127, -127, 1, 3, 0]));
  assert.deepEqual(encodeMsgpack(v), await golden("i8_half_even.msgpack"));
  const dense = makeDenseVector(new Float32Array([254, 125, -125, 127, -127, 1, 3, 0]), "int8");
  assert.deepEqual(encodeMsgpack(dense.values), await golden("i8_half_even.msgpack"));
});

Deno.test("golden: uint8 min-max, exact halves to even", async () => {
  const src = new Float32Array([0, 1, 3, 5, 7, 510, 255, 509]);
  assert.deepEqual(encodeMsgpack(quantizeUint8(src)), await golden("u8_half_even.msgpack"));
  const dense = makeDenseVector(src, "uint8");
  assert.equal(dense.dtype, "uint8");
  assert.equal(dense.dims, 8);
  assert.deepEqual(encodeMsgpack(dense.values), await golden("u8_half_even.msgpack"));
});

Deno.test("golden: uint8 of a constant vector is all 128", async () => {
  const v = makeDenseVector(new Float32Array([0.25, 0.25, 0.25]), "uint8");
  assert.deepEqual(encodeMsgpack(v.values), await golden("u8_constant.msgpack"));
});

Deno.test("golden: uint8 multi-vector quantises each token row on its own", async () => {
  const m = makeMultiVector(new Float32Array([0, 1, 2, 5, 5, 5]), 2, 3, "uint8");
  assert.equal(m.dtype, "uint8");
  assert.deepEqual(encodeMsgpack(m.values), await golden("u8_2d.msgpack"));
});

Deno.test("golden: binary via packBits; ubinary sends the same bytes", async () => {
  const src = new Float32Array([0.3, -1, 2, 0, 0.5, -3, 4, 1, -1, 2]);
  assert.deepEqual(encodeMsgpack(packBits(src)), await golden("binary.msgpack"));
  const ub = makeDenseVector(src, "ubinary");
  assert.equal(ub.dtype, "ubinary");
  assert.equal(ub.dims, 10);
  assert.deepEqual(encodeMsgpack(ub.values), await golden("binary.msgpack"));
});

Deno.test("golden: int32", async () => {
  assert.deepEqual(
    encodeMsgpack(new Int32Array([0, 7, 30521, -1])),
    await golden("i32.msgpack"),
  );
});

Deno.test("golden: 2-D NdArray is one map with a 2-entry shape", async () => {
  const m = NdArray.matrix(new Float32Array([1, 2, 3, 4, 5, 6]), 2, 3);
  assert.deepEqual(encodeMsgpack(m), await golden("f32_2d.msgpack"));
});

Deno.test("golden: whole encode response", async () => {
  const response = {
    model: "m",
    items: [{ id: "a", dense: makeDenseVector(new Float32Array([1, -2, 0.5])) }],
    timing: {
      total_ms: 1.5,
      queue_ms: 0,
      tokenization_ms: 0.25,
      inference_ms: 1,
      postprocessing_ms: null,
    },
  };
  assert.deepEqual(encodeMsgpack(response), await golden("encode_response.msgpack"));
});

// Cross-check with an independent decoder: msgpackr sees exactly the docs/api.md structure.
Deno.test("golden: msgpackr decodes the files to the numpy map (bin keys, str type)", async () => {
  const unpackr = new Unpackr({ mapsAsObjects: false, useRecords: false });
  const td = new TextDecoder();
  const check = (m: unknown, type: string, shape: number[], data: Uint8Array) => {
    assert.ok(m instanceof Map);
    const keys = [...m.keys()];
    assert.ok(keys.every((k) => k instanceof Uint8Array), "keys are bin");
    assert.deepEqual(keys.map((k) => td.decode(k as Uint8Array)), [
      "nd",
      "type",
      "kind",
      "shape",
      "data",
    ]);
    const v = [...m.values()];
    assert.equal(v[0], true);
    assert.equal(v[1], type);
    assert.deepEqual(v[2], new Uint8Array(0));
    assert.deepEqual(v[3], shape);
    assert.deepEqual(new Uint8Array(v[4] as Uint8Array), data);
  };
  check(
    unpackr.unpack(await golden("f32_wire_example.msgpack")),
    "<f4",
    [3],
    new Uint8Array(new Float32Array([1, -2, 0.5]).buffer),
  );
  check(
    unpackr.unpack(await golden("f16.msgpack")),
    "<f2",
    [4],
    new Uint8Array(new Uint16Array([0x3c00, 0xc000, 0x3800, 0x7bff]).buffer),
  );
  check(unpackr.unpack(await golden("i8.msgpack")), "|i1", [4], new Uint8Array([64, 129, 32, 0]));
  check(unpackr.unpack(await golden("binary.msgpack")), "|u1", [2], new Uint8Array([0xab, 0x40]));
  check(
    unpackr.unpack(await golden("i8_half_even.msgpack")),
    "|i1",
    [8],
    new Uint8Array(new Int8Array([127, 62, -62, 64, -64, 0, 2, 0]).buffer),
  );
  check(
    unpackr.unpack(await golden("u8_half_even.msgpack")),
    "|u1",
    [8],
    new Uint8Array([0, 0, 2, 2, 4, 255, 128, 254]),
  );
  check(
    unpackr.unpack(await golden("u8_2d.msgpack")),
    "|u1",
    [2, 3],
    new Uint8Array([0, 128, 255, 128, 128, 128]),
  );
  check(
    unpackr.unpack(await golden("f32_2d.msgpack")),
    "<f4",
    [2, 3],
    new Uint8Array(new Float32Array([1, 2, 3, 4, 5, 6]).buffer),
  );
  const resp = unpackr.unpack(await golden("encode_response.msgpack")) as Map<string, unknown>;
  assert.deepEqual([...resp.keys()], ["model", "items", "timing"]); // str keys outside nd maps
  const timing = resp.get("timing") as Map<string, unknown>;
  assert.equal(timing.get("total_ms"), 1.5);
  assert.equal(timing.get("postprocessing_ms"), null);
});
