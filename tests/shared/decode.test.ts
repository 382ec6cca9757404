/** Request decoding: content types, limits, and every kind of bad input → INVALID_INPUT. */
import assert from "node:assert/strict";
import { pack } from "msgpackr/pack";
import { decodeBody, isMsgpackContentType } from "@svc/shared/codec/decode";
import { DEFAULT_LIMITS, type InputLimits } from "@svc/shared/codec/limits";
import { encodeMsgpack, MsgpackExt } from "#shared/codec/msgpack_encode.ts";
import { decodeRequest, parseRequest } from "@svc/shared/codec/parse";
import { ServiceError } from "@svc/shared/errors";
import { EncodeRequestSchema } from "@svc/shared/schemas/encode";
import { assertInvalid, concat, fromHex, rng } from "./helpers.ts";

const te = new TextEncoder();
const MP = "application/msgpack";
const JSON_CT = "application/json";
const json = (v: unknown): Uint8Array => te.encode(JSON.stringify(v));
const limits = (patch: Partial<InputLimits>): InputLimits => ({ ...DEFAULT_LIMITS, ...patch });
const VALID = {
  items: [{ id: "a", text: "hello" }, { text: "world", images: [{ data: "iVBORw==" }] }],
  params: { output_types: ["dense", "sparse"], options: { profile: "x", n: [1, 2] } },
};

Deno.test("decode: JSON and msgpack bodies give the same request", () => {
  const fromJson = decodeRequest(EncodeRequestSchema, json(VALID), JSON_CT);
  const mp = pack({
    ...VALID,
    items: [VALID.items[0], {
      text: "world",
      images: [{ data: Uint8Array.of(0x89, 0x50, 0x4e, 0x47) }],
    }],
  });
  const fromMsgpack = decodeRequest(EncodeRequestSchema, mp, MP);
  assert.deepEqual(fromJson, fromMsgpack);
  assert.deepEqual(fromJson.items[1].images?.[0].data, Uint8Array.of(0x89, 0x50, 0x4e, 0x47));
});

Deno.test("decode: Content-Type selects the format; JSON otherwise", () => {
  assert.ok(isMsgpackContentType("application/msgpack"));
  assert.ok(isMsgpackContentType("application/x-msgpack"));
  assert.ok(isMsgpackContentType("Application/MsgPack; charset=binary"));
  assert.ok(!isMsgpackContentType("application/json"));
  assert.ok(!isMsgpackContentType(null));
  const mp = encodeMsgpack(VALID);
  assert.deepEqual(decodeBody(mp, "application/x-msgpack"), decodeBody(json(VALID), JSON_CT));
  assert.deepEqual(decodeBody(json(VALID), "text/plain"), decodeBody(json(VALID), JSON_CT));
  // No Content-Type: a msgpack map header cannot start JSON, so it is read as msgpack.
  assert.deepEqual(decodeBody(mp, null), decodeBody(mp, MP));
  assert.deepEqual(decodeBody(json(VALID), null), VALID);
  // A msgpack body labelled JSON is malformed JSON.
  assertInvalid(() => decodeBody(mp, JSON_CT), /not valid UTF-8|malformed JSON/);
});

Deno.test("decode: msgpack bombs (huge declared lengths in a tiny body) are refused at once", () => {
  const bombs: [string, RegExp][] = [
    ["dd ffffffff", /array of 4294967295 elements cannot fit/],
    ["df ffffffff", /map of 4294967295 entries cannot fit/],
    ["dc ffff 01", /array of 65535 elements/],
    ["db ffffffff 61", /declares 4294967300 bytes/],
    ["c6 ffffffff 00", /declares 4294967300 bytes/],
    ["c9 ffffffff 4e 00", /declares 4294967301 bytes/],
    ["81 a5 6974656d73 dd ffffffff", /at byte 7: array of 4294967295/],
    ["81 a5 6974656d73 91 81 a4 74657874 db 7fffffff", /declares/],
  ];
  for (const [hex, re] of bombs) {
    const body = fromHex(hex);
    // The messages come from the pre-scan, so nothing was allocated; the generous bound around
    // the decode alone only catches a scan gone pathological (an allocation would take seconds).
    const t = performance.now();
    assertInvalid(() => decodeBody(body, MP), re);
    assert.ok(performance.now() - t < 1000, `${hex} took too long`);
  }
});

Deno.test("decode: 100k-deep nesting is refused quickly in msgpack and JSON", () => {
  const depth = 100_000;
  // Inputs are built first: only the decoding is timed (building them is slow on a busy machine).
  const mp = new Uint8Array(depth + 1).fill(0x91);
  mp[depth] = 0x90;
  const deepMap = concat(
    ...Array.from({ length: depth }, () => fromHex("81 a1 61")),
    fromHex("c0"),
  );
  const deepList = te.encode("[".repeat(depth) + "]".repeat(depth));
  const deepObject = te.encode('{"a":'.repeat(depth) + "1" + "}".repeat(depth));
  const cases: [Uint8Array, string, RegExp][] = [
    [mp, MP, /nesting exceeds the limit of 32 levels \(SVC_MAX_NESTING_DEPTH\)/],
    [deepMap, MP, /nesting/],
    [deepList, JSON_CT, /nesting/],
    [deepObject, JSON_CT, /nesting/],
  ];
  for (const [body, ct, re] of cases) {
    // A recursive parser would overflow the stack (RangeError, not INVALID_INPUT); the generous
    // bound catches a scan that turned quadratic.
    const t = performance.now();
    assertInvalid(() => decodeBody(body, ct), re);
    assert.ok(performance.now() - t < 2000, `${ct} depth ${depth} took too long`);
  }
  // Exactly at the limit is fine.
  const ok = "[".repeat(32) + "]".repeat(32);
  assert.ok(Array.isArray(decodeBody(te.encode(ok), JSON_CT)));
  // Brackets, escaped quotes and escaped backslashes inside strings do not count as nesting.
  const tricky = { t: '[[[["[[[[\\', u: '{{\\"{' };
  assert.deepEqual(
    decodeBody(te.encode(JSON.stringify(tricky)), JSON_CT, limits({ maxDepth: 1 })),
    tricky,
  );
  assertInvalid(
    () => decodeBody(te.encode(`{"a":{"b":1}}`), JSON_CT, limits({ maxDepth: 1 })),
    /limit of 1 levels/,
  );
});

Deno.test("decode: every truncation of a valid body is INVALID_INPUT", () => {
  for (const [bytes, ct] of [[encodeMsgpack(VALID), MP], [json(VALID), JSON_CT]] as const) {
    for (let n = 0; n < bytes.length; n++) {
      // JSON prefixes that end after a complete value do not exist here: the body is one object.
      assertInvalid(() => decodeBody(bytes.subarray(0, n), ct));
    }
  }
  assertInvalid(() => decodeBody(fromHex("81 a5 6974656d73"), MP), /unexpected end of data/);
  assertInvalid(() => decodeBody(new Uint8Array(0), MP), /body is empty/);
});

Deno.test("decode: malformed msgpack and JSON give the reason", () => {
  assertInvalid(() => decodeBody(fromHex("80 00"), MP), /1 trailing bytes/);
  assertInvalid(() => decodeBody(fromHex("91 c1"), MP), /0xc1/);
  assertInvalid(() => decodeBody(fromHex("81 01 01"), MP), /map key must be a string/);
  assertInvalid(() => decodeBody(fromHex("81 c4 01 61 01"), MP), /map key must be a string/);
  assertInvalid(
    () => decodeBody(fromHex("d6 ff 00000000"), MP),
    /extension type -1 is not supported/,
  );
  // msgpackr's own extensions (records 'r', typed arrays 't', RegExp 'x') are refused too.
  for (const type of [0x72, 0x74, 0x78, 0x00, 0x65]) {
    assertInvalid(
      () => decodeBody(encodeMsgpack({ x: new MsgpackExt(type, Uint8Array.of(1, 2, 3)) }), MP),
      /extension type/,
    );
  }
  assertInvalid(() => decodeBody(te.encode('{"items": [1,}'), JSON_CT), /malformed JSON/);
  assertInvalid(() => decodeBody(Uint8Array.of(0x7b, 0xff, 0x7d), JSON_CT), /not valid UTF-8/);
  assertInvalid(() => decodeBody(te.encode('{"a": "unterminated'), JSON_CT), /malformed JSON/);
});

Deno.test("decode: wrong types and missing fields name the field", () => {
  const bad: [unknown, RegExp][] = [
    [{}, /^items: required field is missing$/],
    [[], /\(body\): Invalid input: expected object, received array/],
    [{ items: "hello" }, /items: Invalid input: expected array, received string/],
    [{ items: [] }, /items: must not be empty/],
    [{ items: [{ text: 5 }] }, /items\[0\]\.text: .*expected string, received number/],
    [{ items: [{ id: 1, text: "a" }] }, /items\[0\]\.id: .*expected string/],
    [{ items: [{ id: "x" }] }, /items\[0\]: an item needs `text` or `images`/],
    [{ items: [{ text: "a" }], params: [] }, /params: .*expected object, received array/],
    [
      { items: [{ text: "a" }], params: { output_dtype: "int4" } },
      /params\.output_dtype: Invalid option/,
    ],
    [
      { items: [{ text: "a" }], params: { output_types: "dense" } },
      /params\.output_types: .*expected array/,
    ],
    [{ items: [{ text: "a" }], params: { options: [1] } }, /params\.options: .*expected record/],
    [
      { items: [{ images: [{ data: "a", format: "gif" }] }] },
      /items\[0\]\.images\[0\]\.format: Invalid option/,
    ],
    [
      { items: [{ images: [{ data: "@@@@" }] }] },
      /items\[0\]\.images\[0\]\.data: not valid base64/,
    ],
    [
      { items: [{ images: [{ data: 12 }] }] },
      /images\[0\]\.data: expected bytes \(msgpack bin\) or a base64 string/,
    ],
    [{ items: [{ images: [{ format: "png" }] }] }, /images\[0\]\.data: required field is missing/],
  ];
  for (const [value, re] of bad) {
    assertInvalid(() => decodeRequest(EncodeRequestSchema, json(value), JSON_CT), re);
    assertInvalid(() => decodeRequest(EncodeRequestSchema, encodeMsgpack(value), MP), re);
  }
  // Several issues: the first three are listed, the rest counted.
  const many = { items: Array.from({ length: 5 }, () => ({ text: 1 })) };
  assertInvalid(
    () => parseRequest(EncodeRequestSchema, many),
    /items\[0\].*; items\[1\].*; items\[2\].*\(and 2 more\)$/,
  );
});

Deno.test("decode: too many items, list limits and numeric-list exemption", () => {
  const items = Array.from({ length: 1025 }, (_, i) => ({ text: `t${i}` }));
  assertInvalid(
    () => decodeBody(json({ items }), JSON_CT),
    /^items: list of 1025 elements exceeds the limit of 1024 \(SVC_MAX_ITEMS\)$/,
  );
  assertInvalid(() => decodeBody(encodeMsgpack({ items }), MP), /SVC_MAX_ITEMS/);
  assert.equal(
    (decodeBody(json({ items: items.slice(0, 1024) }), JSON_CT) as { items: [] }).items.length,
    1024,
  );
  const small = limits({ maxItems: 2 });
  assertInvalid(
    () =>
      decodeBody(
        json({ items: [{ text: "a" }, { text: "b" }], params: { labels: ["x", "y", "z"] } }),
        JSON_CT,
        small,
      ),
    /params\.labels: list of 3/,
  );
  // Token ids are bounded by the body size, not by maxItems.
  const ids = Array.from({ length: 5000 }, (_, i) => i);
  assert.equal(
    (decodeBody(json({ input: ids }), JSON_CT) as { input: number[] }).input.length,
    5000,
  );
});

Deno.test("decode: too-long strings are refused; base64 image data is exempt", () => {
  const long = "x".repeat(100_001);
  assertInvalid(
    () => decodeBody(json({ items: [{ text: "ok" }, { text: long }] }), JSON_CT),
    /^items\[1\]\.text: string of 100001 characters exceeds the limit of 100000 \(SVC_MAX_STRING_LENGTH\)$/,
  );
  assertInvalid(
    () => decodeBody(encodeMsgpack({ items: [{ text: long }] }), MP),
    /items\[0\]\.text/,
  );
  assertInvalid(
    () => decodeBody(json({ items: [{ text: "a" }], params: { options: { k: [long] } } }), JSON_CT),
    /params\.options\.k\[0\]/,
  );
  assertInvalid(() => decodeBody(json({ [long]: 1 }), JSON_CT), /key of 100001 characters/);
  const img = "A".repeat(200_000);
  const req = decodeRequest(
    EncodeRequestSchema,
    json({ items: [{ images: [{ data: img }] }] }),
    JSON_CT,
  );
  assert.equal(req.items[0].images?.[0].data.length, 150_000);
  // ...but only at images[i].data, not some other "data" key.
  assertInvalid(() => decodeBody(json({ data: img }), JSON_CT), /data: string of 200000/);
});

Deno.test("decode: body over the limit is refused before parsing", () => {
  const body = json(VALID);
  const small = limits({ maxBodyBytes: body.length - 1 });
  assertInvalid(
    () => decodeBody(body, JSON_CT, small),
    new RegExp(
      `body of ${body.length} bytes exceeds the limit of ${
        body.length - 1
      } bytes \\(SVC_MAX_BODY_BYTES\\)`,
    ),
  );
  assert.ok(decodeBody(body, JSON_CT, limits({ maxBodyBytes: body.length })));
});

Deno.test("decode: unknown extra keys are tolerated (and dropped by the schemas)", () => {
  const req = decodeRequest(
    EncodeRequestSchema,
    json({ ...VALID, future: { x: 1 }, items: [{ text: "a", extra: true }] }),
    JSON_CT,
  );
  assert.deepEqual(req.items, [{ text: "a" }]);
  assert.ok(!("future" in req));
});

Deno.test("decode: __proto__ keys cannot pollute prototypes", () => {
  const j = te.encode('{"items":[{"text":"a"}],"params":{"options":{"__proto__":{"polluted":1}}}}');
  const req = decodeRequest(EncodeRequestSchema, j, JSON_CT);
  const mp = encodeMsgpack(
    new Map<unknown, unknown>([["items", [{ text: "a" }]], ["__proto__", { polluted: 1 }]]),
  );
  decodeRequest(EncodeRequestSchema, mp, MP);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(Object.getPrototypeOf(req.params.options ?? {})?.polluted, undefined);
});

Deno.test("decode: fuzzed and random bodies only ever give a value or INVALID_INPUT", () => {
  const next = rng(42);
  const seeds = [
    encodeMsgpack(VALID),
    pack({ a: [1.5, -3, "ü", null, true, { b: Uint8Array.of(1) }] }),
    encodeMsgpack({ x: new MsgpackExt(78, te.encode("<f4|1|abcd")) }),
  ];
  let failures = 0;
  for (let round = 0; round < 3000; round++) {
    const seed = seeds[round % seeds.length];
    const bytes = round % 10 === 9
      ? Uint8Array.from({ length: 1 + Math.floor(next() * 40) }, () => Math.floor(next() * 256))
      : seed.slice();
    for (let k = 0; k < 1 + Math.floor(next() * 4); k++) {
      bytes[Math.floor(next() * bytes.length)] = Math.floor(next() * 256);
    }
    for (const ct of [MP, JSON_CT]) {
      try {
        const v = decodeBody(bytes, ct);
        parseRequest(EncodeRequestSchema, v);
      } catch (err) {
        if (!(err instanceof ServiceError) || err.code !== "INVALID_INPUT") {
          assert.fail(`round ${round}: ${String(err)} for ${Array.from(bytes).join(",")}`);
        }
        failures++;
      }
    }
  }
  assert.ok(failures > 0);
  // The decoder is still healthy afterwards (msgpackr keeps module-level state).
  assert.deepEqual(decodeBody(encodeMsgpack(VALID), MP), VALID);
});

Deno.test("decode: a genuine U+FFFD in JSON text is fine, invalid UTF-8 is not", () => {
  assert.deepEqual(decodeBody(te.encode('{"t":"a\uFFFDb"}'), JSON_CT), { t: "a\uFFFDb" });
  assertInvalid(
    () => decodeBody(Uint8Array.of(0x22, 0xc3, 0x28, 0x22), JSON_CT),
    /not valid UTF-8/,
  );
});

Deno.test("decode: bodies with more values than SVC_MAX_VALUES are refused before decoding", () => {
  // 1.1 M nils in 1.1 MB would become 1.1 M array slots; 1.1 M `{}` would become objects.
  const n = 1_100_000;
  const nils = concat(fromHex("dd 0010c8e0"), new Uint8Array(n).fill(0xc0));
  assertInvalid(
    () => decodeBody(nils, MP),
    /holds more than 1048576 values \(SVC_MAX_VALUES\)/,
  );
  const objs = te.encode("[" + Array(n).fill("{}").join(",") + "]");
  assertInvalid(() => decodeBody(objs, JSON_CT), /holds more than 1048576 values/);
  const small = limits({ maxValues: 2048 });
  assertInvalid(
    () => decodeBody(encodeMsgpack({ a: Array(3000).fill(null) }), MP, small),
    /more than 2048 values/,
  );
  // Real requests are far below the budget: 300k token ids (OpenAI's per-request maximum).
  const ids = te.encode(
    JSON.stringify({ model: "m", input: Array.from({ length: 300_000 }, (_, i) => i % 30000) }),
  );
  assert.equal((decodeBody(ids, JSON_CT) as { input: number[] }).input.length, 300_000);
});

Deno.test("decode: objects with more keys than SVC_MAX_OBJECT_KEYS are refused before parsing", () => {
  // The body: params.options with 500,000 keys (answered 200 after ~5 s before).
  const n = 500_000;
  const keys: string[] = [];
  for (let i = 0; i < n; i++) keys.push(`"k${i}":1`);
  const text = te.encode(`{"items":[{"text":"a"}],"params":{"options":{${keys.join(",")}}}}`);
  const options: Record<string, number> = {};
  for (let i = 0; i < n; i++) options[`k${i}`] = 1;
  const packed = encodeMsgpack({ items: [{ text: "a" }], params: { options } });
  const t0 = performance.now();
  assertInvalid(() => decodeBody(text, JSON_CT), /more than 256 keys \(SVC_MAX_OBJECT_KEYS\)/);
  const t1 = performance.now();
  assertInvalid(() => decodeBody(packed, MP), /SVC_MAX_OBJECT_KEYS/);
  const t2 = performance.now();
  // Refused by the pre-scans: well under the seconds that parsing and validation took.
  assert.ok(t1 - t0 < 1000 && t2 - t1 < 1000, `${t1 - t0} ms, ${t2 - t1} ms`);

  const few = limits({ maxObjectKeys: 3 });
  const ok = { items: [{ text: "a" }], params: { options: { a: 1, b: "x:y", c: { d: 1, e: 2 } } } };
  assert.deepEqual(decodeBody(json(ok), JSON_CT, few), ok, "colons in strings never count");
  assert.deepEqual(decodeBody(encodeMsgpack(ok), MP, few), ok);
  const four = { items: [{ text: "a" }], params: { options: { a: 1, b: 2, c: 3, d: 4 } } };
  assertInvalid(() => decodeBody(json(four), JSON_CT, few), /more than 3 keys/);
  assertInvalid(() => decodeBody(encodeMsgpack(four), MP, few), /more than 3 keys/);
  // Repeated keys cost parsing time too: they count.
  assertInvalid(
    () => decodeBody(te.encode('{"items":[],"a":1,"a":2,"a":3}'), JSON_CT, few),
    /more than 3 keys/,
  );
});
