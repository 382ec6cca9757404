/**
 * The client's answers carry typed arrays in both wire formats: answers written by the server's
 * own encoders (shared/codec) decode to Float32Array (float32 and float16), Int8Array, Uint8Array
 * (uint8, binary) and Int32Array sparse indices, with multi-vectors as one row per token.
 */
import assert from "node:assert/strict";
import { SvcClient } from "@svc/client";
import { encodeMsgpack } from "#shared/codec/msgpack_encode.ts";
import { encodeJson } from "#shared/codec/json_encode.ts";
import { NdArray } from "#shared/codec/ndarray.ts";
import { float32ToFloat16 } from "@svc/shared/codec/float16";
import { scriptedServer } from "./scripted.ts";

const dense = new Float32Array([0.5, -1.25, 3]);
const rows = new Float32Array([1, 2, 3, 4, 5, 6]);

/** An encode answer as the worker builds it (typed arrays and NdArrays before encoding). */
function serverAnswer() {
  return {
    model: "m",
    items: [
      { id: "f32", dense: { dims: 3, dtype: "float32", values: dense } },
      { id: "f16", dense: { dims: 3, dtype: "float16", values: float32ToFloat16(dense) } },
      { id: "i8", dense: { dims: 3, dtype: "int8", values: new Int8Array([64, -127, 1]) } },
      { id: "u8", dense: { dims: 3, dtype: "uint8", values: new Uint8Array([0, 128, 255]) } },
      { id: "bin", dense: { dims: 3, dtype: "binary", values: new Uint8Array([0b10100000]) } },
      {
        id: "sp",
        sparse: {
          dims: 1000,
          dtype: "float32",
          indices: new Int32Array([7, 900]),
          values: new Float32Array([0.25, 2]),
        },
      },
      {
        id: "mv",
        multivector: {
          token_dims: 3,
          num_tokens: 2,
          dtype: "float32",
          values: NdArray.matrix(rows, 2, 3),
        },
      },
    ],
    timing: {
      total_ms: 1,
      queue_ms: 0,
      tokenization_ms: 0,
      inference_ms: 1,
      postprocessing_ms: null,
    },
  };
}

for (const format of ["msgpack", "json"] as const) {
  Deno.test(`client decodes encode answers to typed arrays (${format})`, async () => {
    const body = format === "msgpack"
      ? encodeMsgpack(serverAnswer())
      : new TextEncoder().encode(encodeJson(serverAnswer()));
    const server = scriptedServer([{
      status: 200,
      body,
      headers: { "content-type": `application/${format}` },
    }]);
    try {
      const res = await new SvcClient({ baseUrl: server.url, format }).encode("m", ["x"]);
      const by = Object.fromEntries(res.items.map((i) => [i.id, i]));
      assert.ok(by.f32.dense!.values instanceof Float32Array);
      assert.deepEqual([...by.f32.dense!.values], [...dense]);
      assert.ok(by.f16.dense!.values instanceof Float32Array, "float16 is widened to float32");
      assert.deepEqual([...by.f16.dense!.values], [0.5, -1.25, 3]);
      assert.ok(by.i8.dense!.values instanceof Int8Array);
      assert.deepEqual([...by.i8.dense!.values], [64, -127, 1]);
      assert.ok(by.u8.dense!.values instanceof Uint8Array);
      assert.deepEqual([...by.u8.dense!.values], [0, 128, 255]);
      assert.ok(by.bin.dense!.values instanceof Uint8Array);
      assert.equal(by.bin.dense!.dims, 3);
      assert.deepEqual([...by.bin.dense!.values], [0b10100000]);
      const sp = by.sp.sparse!;
      assert.ok(sp.indices instanceof Int32Array);
      assert.deepEqual([...sp.indices], [7, 900]);
      assert.ok(sp.values instanceof Float32Array);
      assert.deepEqual([...sp.values], [0.25, 2]);
      const mv = by.mv.multivector!;
      assert.equal(mv.values.length, 2);
      assert.ok(mv.values.every((r: ArrayLike<number>) => r instanceof Float32Array));
      const got = mv.values.map((r: ArrayLike<number>) => Array.from(r));
      assert.deepEqual(got, [[1, 2, 3], [4, 5, 6]]);
      assert.equal(res.timing?.postprocessing_ms, null);
    } finally {
      await server.close();
    }
  });
}
