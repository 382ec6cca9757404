/**
 * The compatibility client itself: its msgpack reader agrees with the hand-assembled golden files,
 * it refuses a numpy map that breaks the wire rules, and it follows the SIE clients' conversation
 * rules against a scripted server on 127.0.0.1 (MODEL_LOADING retried by Retry-After,
 * MODEL_LOAD_FAILED raised at once, version skew warned once). The same rules are then exercised
 * against real processes in wire.test.ts.
 */
import assert from "node:assert/strict";
import { CompatClient, ServiceCallError, versionSkew } from "./client/client.ts";
import { isWireArray, pack, unpack, type WireArray } from "./client/msgpack.ts";
import { elements, rows, unpackBits } from "./client/numpy.ts";

const golden = (name: string) =>
  Deno.readFile(new URL(`../shared/golden/${name}`, import.meta.url));

function wire(v: unknown): WireArray {
  assert.ok(isWireArray(v), "a numpy map");
  return v;
}

Deno.test("compat client: reads the golden numpy maps of every dtype", async () => {
  const f32 = wire(unpack(await golden("f32_wire_example.msgpack")));
  assert.equal(f32.dtype, "<f4");
  assert.deepEqual(f32.shape, [3]);
  assert.deepEqual(elements(f32), [1, -2, 0.5]);
  assert.deepEqual(elements(wire(unpack(await golden("f16.msgpack")))), [1, -2, 0.5, 65504]);
  assert.deepEqual(
    elements(wire(unpack(await golden("i8_half_even.msgpack")))),
    [127, 62, -62, 64, -64, 0, 2, 0],
  );
  assert.deepEqual(
    elements(wire(unpack(await golden("u8_half_even.msgpack")))),
    [0, 0, 2, 2, 4, 255, 128, 254],
  );
  assert.deepEqual(elements(wire(unpack(await golden("i32.msgpack")))), [0, 7, 30521, -1]);
  const bits = wire(unpack(await golden("binary.msgpack")));
  assert.equal(bits.dtype, "|u1");
  assert.deepEqual(unpackBits(elements(bits), 10), [1, 0, 1, 0, 1, 0, 1, 1, 0, 1]);
  assert.deepEqual(rows(wire(unpack(await golden("f32_2d.msgpack")))), [[1, 2, 3], [4, 5, 6]]);
  const resp = unpack(await golden("encode_response.msgpack")) as Record<string, unknown>;
  assert.deepEqual(Object.keys(resp), ["model", "items", "timing"]);
  assert.deepEqual((resp.timing as Record<string, unknown>).postprocessing_ms, null);
});

Deno.test("compat client: a numpy map out of order or with a str kind is refused", () => {
  const bin = (s: string) => [0xc4, s.length, ...new TextEncoder().encode(s)];
  const map = (kind: number[], order = ["nd", "type", "kind", "shape", "data"]) => {
    const v: Record<string, number[]> = {
      nd: [0xc3],
      type: [0xa3, ...new TextEncoder().encode("|u1")],
      kind,
      shape: [0x91, 0x01],
      data: [0xc4, 0x01, 0x07],
    };
    return Uint8Array.from([0x85, ...order.flatMap((k) => [...bin(k), ...v[k]])]);
  };
  assert.deepEqual(elements(wire(unpack(map([0xc4, 0x00])))), [7]);
  assert.throws(() => unpack(map([0xa0])), /kind is not an empty bin/);
  assert.throws(
    () => unpack(map([0xc4, 0x00], ["type", "nd", "kind", "shape", "data"])),
    /numpy map keys/,
  );
  const req = { items: [{ id: "a", text: "héllo" }], params: { n: 300, x: -1.5, ok: true } };
  assert.deepEqual(unpack(pack(req)), req);
});

Deno.test("compat client: version skew compares major.minor", () => {
  assert.equal(versionSkew("0.1.0", "0.1.7"), false);
  assert.equal(versionSkew("0.1.0", "0.2.0"), true);
  assert.equal(versionSkew("1.1.0", "0.1.0"), true);
});

/** A scripted server: answers the n-th request with `script[n]`; records request headers. */
async function scripted(
  script: (() => Response)[],
  fn: (url: string, requests: Headers[]) => Promise<void>,
): Promise<void> {
  const requests: Headers[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    requests.push(req.headers);
    const answer = script[Math.min(requests.length - 1, script.length - 1)];
    return answer();
  });
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`, requests);
  } finally {
    await server.shutdown();
  }
}

const error = (status: number, detail: Record<string, unknown>, headers = {}) => () =>
  Response.json({ detail }, { status, headers: { "x-sie-server-version": "0.1.0", ...headers } });
const ok = (version = "0.1.0") => () =>
  new Response(pack({ model: "m", items: [] }), {
    headers: { "content-type": "application/msgpack", "x-sie-server-version": version },
  });

Deno.test("compat client: MODEL_LOADING is retried by Retry-After, then succeeds", async () => {
  const loading = error(503, { code: "MODEL_LOADING", message: "loading" }, { "retry-after": "0" });
  await scripted([loading, loading, ok()], async (url, requests) => {
    const c = new CompatClient({ baseUrl: url, version: "0.1.0", machineProfile: "cpu" });
    const body = await c.encode("m", [{ text: "x" }]);
    assert.equal(body.model, "m");
    assert.deepEqual(c.seen.map((s) => s.status), [503, 503, 200]);
    assert.equal(requests[0].get("content-type"), "application/msgpack");
    assert.equal(requests[0].get("x-sie-machine-profile"), "cpu");
    assert.deepEqual(c.warnings, []);
  });
});

Deno.test("compat client: MODEL_LOAD_FAILED (no Retry-After) is raised at once", async () => {
  const failed = error(502, {
    code: "MODEL_LOAD_FAILED",
    message: "gated",
    error_class: "gated",
    attempts: 1,
    permanent: true,
  });
  await scripted([failed, ok()], async (url) => {
    const c = new CompatClient({ baseUrl: url, version: "0.1.0" });
    const err = await c.encode("m", [{ text: "x" }]).catch((e) => e);
    assert.ok(err instanceof ServiceCallError);
    assert.equal(err.code, "MODEL_LOAD_FAILED");
    assert.equal(err.retryAfter, null);
    assert.equal(err.detail.permanent, true);
    assert.equal(c.seen.length, 1, "no retry");
  });
});

Deno.test("compat client: warns once when the server's version differs", async () => {
  await scripted([ok("0.9.3")], async (url) => {
    const c = new CompatClient({ baseUrl: url, version: "0.1.0" });
    await c.encode("m", [{ text: "x" }]);
    await c.encode("m", [{ text: "y" }]);
    assert.equal(c.serverVersion, "0.9.3");
    assert.deepEqual(c.warnings, ["server version 0.9.3 differs from client version 0.1.0"]);
  });
});
