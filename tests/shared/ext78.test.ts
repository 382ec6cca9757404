/** msgpack extension type 78 (typed arrays in requests). */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { decodeBody } from "@svc/shared/codec/decode";
import { decodeExt78, encodeExt78 } from "#shared/codec/ext78.ts";
import { encodeMsgpack, MsgpackExt } from "#shared/codec/msgpack_encode.ts";
import { NdArray } from "#shared/codec/ndarray.ts";
import { parseRequest } from "@svc/shared/codec/parse";
import { EncodeRequestSchema } from "@svc/shared/schemas/encode";
import { assertInvalid, concat, fromHex } from "./helpers.ts";

const te = new TextEncoder();
const MP = "application/msgpack";
const payload = (head: string, data: ArrayBufferView): Uint8Array =>
  concat(te.encode(head), new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
/** A msgpack body `{x: ext78(payload)}`. */
const body = (p: Uint8Array): Uint8Array => encodeMsgpack({ x: new MsgpackExt(78, p) });
const decodeX = (p: Uint8Array): unknown => (decodeBody(body(p), MP) as { x: unknown }).x;

Deno.test("ext78: the docs/api.md example <f4|3|<12 bytes> becomes a Float32Array", () => {
  const p = payload("<f4|3|", new Float32Array([1, -2, 0.5]));
  // Hand-built ext8 header: c7 <len> 4e, inside a fixmap {"x": …}.
  const bytes = concat(fromHex(`81 a1 78 c7 ${p.length.toString(16)} 4e`), p);
  const v = (decodeBody(bytes, MP) as { x: unknown }).x;
  assert.ok(v instanceof Float32Array);
  assert.deepEqual(Array.from(v), [1, -2, 0.5]);
});

Deno.test("ext78: every supported dtype", () => {
  const f16 = decodeX(payload("<f2|3|", Uint16Array.of(0x3c00, 0xc000, 0x3800)));
  assert.ok(f16 instanceof Float32Array, "float16 is widened to float32");
  assert.deepEqual(Array.from(f16), [1, -2, 0.5]);
  assert.deepEqual(decodeX(payload("<f8|2|", Float64Array.of(0.1, 2))), Float64Array.of(0.1, 2));
  assert.deepEqual(decodeX(payload("|i1|2|", Int8Array.of(-5, 7))), Int8Array.of(-5, 7));
  assert.deepEqual(decodeX(payload("|u1|2|", Uint8Array.of(250, 7))), Uint8Array.of(250, 7));
  assert.deepEqual(decodeX(payload("<i1|1|", Int8Array.of(-1))), Int8Array.of(-1));
  assert.deepEqual(decodeX(payload("<i2|2|", Int16Array.of(-300, 5))), Int16Array.of(-300, 5));
  assert.deepEqual(decodeX(payload("<u2|1|", Uint16Array.of(65535))), Int32Array.of(65535));
  assert.deepEqual(decodeX(payload("<i4|2|", Int32Array.of(-1, 30521))), Int32Array.of(-1, 30521));
  assert.deepEqual(decodeX(payload("<u4|1|", Uint32Array.of(4e9))), Uint32Array.of(4e9));
  assert.deepEqual(
    decodeX(payload("<i8|3|", BigInt64Array.of(101n, -2n, 2n ** 40n))),
    Float64Array.of(101, -2, 2 ** 40),
  );
});

Deno.test("ext78: 2-D becomes an NdArray, 0-D a number; shape spacing is tolerated", () => {
  const m = decodeX(payload("<f4|2,3|", new Float32Array([1, 2, 3, 4, 5, 6])));
  assert.ok(m instanceof NdArray);
  assert.deepEqual(m.shape, [2, 3]);
  assert.deepEqual(Array.from(m.row(1)), [4, 5, 6]);
  assert.equal(decodeX(payload("<f4||", Float32Array.of(2.5))), 2.5);
  const t = decodeX(payload("<i4|2, 1,|", Int32Array.of(1, 2)));
  assert.ok(t instanceof NdArray);
  assert.deepEqual(t.shape, [2, 1]);
});

Deno.test("ext78: fixext16 payload and unaligned offsets decode correctly", () => {
  // "<f2|5|" + 10 bytes = 16 bytes: the encoder picks fixext16 (d8 4e).
  const p = payload("<f2|5|", Uint16Array.of(0x3c00, 0x4000, 0x4200, 0x4400, 0x4500));
  assert.equal(p.length, 16);
  const bytes = body(p);
  assert.ok(bytes.includes(0xd8));
  assert.deepEqual(Array.from(decodeX(p) as Float32Array), [1, 2, 3, 4, 5]);
  // A 1-char key shifts the payload to an odd offset: values must still be right.
  const q = payload("<f4|2|", Float32Array.of(1.25, -3));
  const odd = encodeMsgpack({ abc: "x", y: new MsgpackExt(78, q) });
  const v = (decodeBody(odd, MP) as { y: Float32Array }).y;
  assert.deepEqual(Array.from(v), [1.25, -3]);
});

Deno.test("ext78: encodeExt78 round-trips through decodeExt78", () => {
  const v = Float32Array.of(0.5, 1, 2);
  assert.deepEqual(decodeExt78(encodeExt78(v)), v);
  const m = NdArray.matrix(Int32Array.of(1, 2, 3, 4), 2, 2);
  const back = decodeExt78(encodeExt78(m));
  assert.ok(back instanceof NdArray);
  assert.deepEqual(back.data, m.data);
  assert.deepEqual(back.shape, [2, 2]);
});

Deno.test("ext78: image bytes sent as |u1 are accepted as ImageInput.data", () => {
  const png = Uint8Array.of(0x89, 0x50, 0x4e, 0x47);
  const bytes = encodeMsgpack({
    items: [{ images: [{ data: new MsgpackExt(78, payload("|u1|4|", png)), format: "png" }] }],
  });
  const req = parseRequest(EncodeRequestSchema, decodeBody(bytes, MP));
  assert.deepEqual(req.items[0].images?.[0].data, png);
});

Deno.test("ext78: malformed payloads are INVALID_INPUT with the reason", () => {
  const f4 = new Float32Array([1, 2, 3]);
  assertInvalid(() => decodeX(payload("<f4|4|", f4)), /needs 16 bytes, got 12/);
  assertInvalid(() => decodeX(payload(">f4|3|", f4)), /big-endian/);
  assertInvalid(() => decodeX(payload("<c8|1|", f4)), /unsupported dtype "<c8"/);
  assertInvalid(() => decodeX(payload("<f4|a,b|", f4)), /invalid shape/);
  assertInvalid(() => decodeX(te.encode("<f4 3 xxxx")), /not 'dtype\|shape\|bytes'/);
  assertInvalid(() => decodeX(new Uint8Array(0)), /typed array/);
  assertInvalid(
    () => decodeX(payload("<i8|1|", BigInt64Array.of(2n ** 60n))),
    /beyond ±2\^53/,
  );
  assertInvalid(() => decodeX(payload("<f4|99999999999|", f4)), /needs/);
});

Deno.test("ext78: a Node Buffer body decodes the same (Buffer.slice is a view, not a copy)", () => {
  const p = payload("<f4|2|", Float32Array.of(1.25, -3));
  const bytes = encodeMsgpack({ abc: "x", y: new MsgpackExt(78, p) });
  const v = (decodeBody(Buffer.from(bytes), MP) as { y: Float32Array }).y;
  assert.deepEqual(Array.from(v), [1.25, -3]);
});
