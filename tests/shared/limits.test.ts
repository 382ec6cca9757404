/** InputLimits from the environment, and reading bodies without exceeding the limit. */
import assert from "node:assert/strict";
import { readBodyLimited } from "@svc/shared/codec/decode";
import { DEFAULT_LIMITS, type InputLimits } from "@svc/shared/codec/limits";
import { COMMON_FIELDS, type Env, limitsOf, settingsSchema } from "@svc/shared/config";
import { assertInvalid } from "./helpers.ts";

/** The limits both processes read, through the shared settings fields. */
const COMMON = settingsSchema(COMMON_FIELDS);
const limitsFromEnv = (env: Env): InputLimits => limitsOf(COMMON.load(env));

Deno.test("limits: documented defaults", () => {
  assert.deepEqual(DEFAULT_LIMITS, {
    maxBodyBytes: 32 * 1024 * 1024,
    maxDepth: 32,
    maxItems: 1024,
    maxStringLength: 100_000,
    maxObjectKeys: 256,
    maxValues: 1_048_576,
  });
  assert.deepEqual(limitsFromEnv({}), DEFAULT_LIMITS);
  assert.deepEqual(limitsFromEnv({ SVC_MAX_ITEMS: "" }), DEFAULT_LIMITS);
});

Deno.test("limits: each variable sets its limit", () => {
  assert.deepEqual(
    limitsFromEnv({
      SVC_MAX_BODY_BYTES: "1048576",
      SVC_MAX_NESTING_DEPTH: "8",
      SVC_MAX_ITEMS: " 64 ",
      SVC_MAX_STRING_LENGTH: "5000",
      SVC_MAX_OBJECT_KEYS: "16",
      SVC_MAX_VALUES: "4096",
      UNRELATED: "x",
    }),
    {
      maxBodyBytes: 1048576,
      maxDepth: 8,
      maxItems: 64,
      maxStringLength: 5000,
      maxObjectKeys: 16,
      maxValues: 4096,
    },
  );
});

Deno.test("limits: invalid values throw an Error naming the variable", () => {
  const bad: [string, string][] = [
    ["SVC_MAX_BODY_BYTES", "32MB"],
    ["SVC_MAX_BODY_BYTES", "0"],
    ["SVC_MAX_NESTING_DEPTH", "-1"],
    ["SVC_MAX_NESTING_DEPTH", "100000"], // the parsers recurse: capped at 1000
    ["SVC_MAX_ITEMS", "1.5"],
    ["SVC_MAX_STRING_LENGTH", "1e5"],
  ];
  for (const [name, value] of bad) {
    assert.throws(() => limitsFromEnv({ [name]: value }), (err: unknown) => {
      assert.ok(err instanceof Error);
      assert.match(err.message, new RegExp(`^${name} must be an integer`));
      assert.ok(err.message.includes(value));
      return true;
    });
  }
});

Deno.test("readBodyLimited: declared and streamed bodies over the limit are refused", async () => {
  const limits = { ...DEFAULT_LIMITS, maxBodyBytes: 10 };
  const ok = new Request("http://x/", { method: "POST", body: "0123456789" });
  assert.equal(new TextDecoder().decode(await readBodyLimited(ok, limits)), "0123456789");
  const declared = new Request("http://x/", {
    method: "POST",
    body: "01234567890",
    headers: { "content-length": "11" },
  });
  await assertRejectsInvalid(() => readBodyLimited(declared, limits), /body of 11 bytes exceeds/);
  // A stream without Content-Length: cut off as soon as it passes the limit.
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      pulled++;
      c.enqueue(new Uint8Array(4));
      if (pulled > 1000) c.close();
    },
  });
  const streamed = new Request("http://x/", { method: "POST", body: stream });
  await assertRejectsInvalid(() => readBodyLimited(streamed, limits), /more than 10/);
  assert.ok(pulled < 10, `read ${pulled} chunks before stopping`);
  const chunks = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(Uint8Array.of(1, 2));
      c.enqueue(Uint8Array.of(3));
      c.close();
    },
  });
  const joined = await readBodyLimited(
    new Request("http://x/", { method: "POST", body: chunks }),
    limits,
  );
  assert.deepEqual(joined, Uint8Array.of(1, 2, 3));
  assert.deepEqual(await readBodyLimited(new Request("http://x/"), limits), new Uint8Array(0));
});

async function assertRejectsInvalid(fn: () => Promise<unknown>, re: RegExp): Promise<void> {
  let err: unknown;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  assertInvalid(() => {
    if (err) throw err;
  }, re);
}
