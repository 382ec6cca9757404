import assert from "node:assert/strict";
import {
  decodeRouterMessage,
  decodeWorkerMessage,
  encodeMessage,
  FLEET_PROTOCOL_VERSION,
  MAX_FRAME_BYTES,
  type RegisterMessage,
} from "@svc/shared/fleet/protocol";

const register: RegisterMessage = {
  type: "register",
  protocol: FLEET_PROTOCOL_VERSION,
  worker_id: "host-1-abc",
  url: "http://10.0.0.5:8080",
  machine_profile: "l4",
  pool: "l4",
  bundle: "default",
  version: "0.1.0",
  gpus: { count: 1, types: ["l4"] },
  models: [{ name: "BAAI/bge-small-en-v1.5", bundle: "default", state: "loaded" }],
  draining: false,
};

Deno.test("protocol: a register frame round-trips", () => {
  const d = decodeWorkerMessage(encodeMessage(register));
  assert.ok(d.ok);
  assert.deepEqual(d.message, register);
});

Deno.test("protocol: draining defaults to false", () => {
  const { draining: _, ...rest } = register;
  const d = decodeWorkerMessage(JSON.stringify(rest));
  assert.ok(d.ok && d.message.type === "register" && d.message.draining === false);
});

Deno.test("protocol: bad frames are rejected with a reason", () => {
  const cases: [unknown, RegExp][] = [
    [new Uint8Array(3), /JSON text/],
    ["{", /not valid JSON/],
    [JSON.stringify({ type: "nope" }), /invalid frame/],
    [JSON.stringify({ ...register, url: "file:///etc/passwd" }), /url/],
    [JSON.stringify({ ...register, url: "http://user:pw@host/" }), /url/],
    [JSON.stringify({ ...register, worker_id: "has space" }), /worker_id/],
    [JSON.stringify({ ...register, machine_profile: "L4!" }), /machine_profile/],
    [
      JSON.stringify({ ...register, models: [{ name: "m", bundle: "default", state: "odd" }] }),
      /models/,
    ],
    ["x".repeat(MAX_FRAME_BYTES + 1), /too large/],
  ];
  for (const [frame, re] of cases) {
    const d = decodeWorkerMessage(frame);
    assert.equal(d.ok, false);
    if (!d.ok) assert.match(d.error, re);
  }
});

Deno.test("protocol: status, drain, ping and pong frames decode", () => {
  const frames = [
    {
      type: "status",
      seq: 3,
      models: [{ name: "m", state: "loading", queue_depth: 2 }],
      queue_depth: 2,
      in_flight: 1,
      memory_used_bytes: 10,
      memory_total_bytes: 100,
      draining: false,
    },
    { type: "drain", reason: "shutdown" },
    { type: "ping", t: 1 },
    { type: "pong", t: 1 },
  ];
  for (const f of frames) assert.ok(decodeWorkerMessage(JSON.stringify(f)).ok, f.type);
  const neg = { ...frames[0], queue_depth: -1 };
  assert.equal(decodeWorkerMessage(JSON.stringify(neg)).ok, false);
});

Deno.test("protocol: router frames decode; worker frames are not router frames", () => {
  const registered = {
    type: "registered",
    protocol: 1,
    router_version: "0.1.0",
    router_id: "r",
    heartbeat_interval_ms: 500,
    status_interval_ms: 1000,
    stale_after_ms: 3000,
  };
  assert.ok(decodeRouterMessage(JSON.stringify(registered)).ok);
  assert.ok(decodeRouterMessage(JSON.stringify({ type: "ack", of: "drain" })).ok);
  assert.ok(
    decodeRouterMessage(JSON.stringify({ type: "error", code: "REPLACED", message: "x" })).ok,
  );
  assert.equal(decodeRouterMessage(encodeMessage(register)).ok, false);
});
