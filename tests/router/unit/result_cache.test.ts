/**
 * The result cache's parts, alone: the store (LRU by bytes, time to live on fake time), the key
 * (what it covers, independent of how the body was chunked), Cache-Control, capturing an answer
 * on its way to the client, and the wait of a coalesced request (fake time).
 */
import assert from "node:assert/strict";
import {
  ENTRY_OVERHEAD_BYTES,
  entryBytes,
  ResultStore,
  type StoredAnswer,
} from "#router/cache/store.ts";
import { type KeyParts, resultKey } from "#router/cache/key.ts";
import { cacheModeOf } from "#router/cache/edge.ts";
import { captureAnswer } from "#router/cache/capture.ts";
import { awaitLanding, Flights } from "#router/cache/flights.ts";
import type { WorkerAnswer } from "#router/proxy/forward.ts";
import { FakeTime } from "../../helpers/fake_time.ts";

const REV = "0123456789abcdef0123456789abcdef";

function answer(body: string, revision = REV, producer = "conn-1"): StoredAnswer {
  return {
    status: 200,
    headers: [["content-type", "application/json"]],
    body: new TextEncoder().encode(body),
    revision,
    producer,
  };
}

Deno.test("result store: least recently used entries go first once the bytes are over the bound", () => {
  const one = entryBytes("k1", answer("x".repeat(100)));
  const store = new ResultStore({ maxBytes: 3 * one, maxEntryBytes: 1000, ttlMs: 0 });
  for (const k of ["k1", "k2", "k3"]) assert.ok(store.set(k, answer("x".repeat(100))));
  assert.equal(store.bytes, 3 * one);
  // k1 used: k2 is now the least recently used.
  assert.ok(store.get("k1"));
  assert.ok(store.set("k4", answer("x".repeat(100))));
  assert.equal(store.get("k2"), undefined);
  for (const k of ["k1", "k3", "k4"]) assert.ok(store.get(k), k);
  assert.equal(store.bytes, 3 * one);
  // A bigger entry evicts as many as it needs.
  const big = answer("y".repeat(100 + one));
  assert.ok(store.set("k5", big));
  assert.ok(store.bytes <= 3 * one);
  assert.equal(store.get("k1"), undefined);
  assert.equal(store.get("k3"), undefined);
  assert.deepEqual(store.get("k5"), big);
});

Deno.test("result store: a producer's entries are purged together, and only its own", () => {
  const store = new ResultStore({ maxBytes: 100_000, maxEntryBytes: 1000, ttlMs: 0 });
  for (const k of ["a1", "a2", "a3"]) store.set(k, answer(k, REV, "conn-a"));
  for (const k of ["b1", "b2"]) store.set(k, answer(k, REV, "conn-b"));
  // Replaced by another producer's answer: the key moves to it.
  store.set("a3", answer("a3", REV, "conn-b"));
  assert.deepEqual([...store.producers()].sort(), ["conn-a", "conn-b"]);
  assert.equal(store.purge("conn-a"), 2);
  assert.equal(store.get("a1"), undefined);
  assert.equal(store.get("a2"), undefined);
  for (const k of ["a3", "b1", "b2"]) assert.ok(store.get(k), k);
  assert.deepEqual([...store.producers()], ["conn-b"]);
  assert.equal(store.purge("conn-a"), 0);
  // Evicted and deleted entries leave the index too.
  store.delete("b1");
  assert.equal(store.purge("conn-b"), 2);
  assert.equal(store.size, 0);
  assert.equal(store.bytes, 0);
  assert.deepEqual([...store.producers()], []);
});

Deno.test("result store: bodies over the entry bound, or over the whole bound, are not kept", () => {
  const store = new ResultStore({ maxBytes: 10_000, maxEntryBytes: 100, ttlMs: 0 });
  assert.equal(store.set("a", answer("x".repeat(101))), false);
  assert.ok(store.set("b", answer("x".repeat(100))));
  const small = new ResultStore({ maxBytes: ENTRY_OVERHEAD_BYTES, maxEntryBytes: 100, ttlMs: 0 });
  assert.equal(small.set("c", answer("x")), false);
  assert.equal(small.bytes, 0);
  // Replacing an entry replaces its bytes.
  assert.ok(store.set("b", answer("x")));
  assert.equal(store.bytes, entryBytes("b", answer("x")));
  assert.equal(store.size, 1);
});

Deno.test("result store: an entry is served until its time to live is over (fake time)", async () => {
  using time = new FakeTime();
  const store = new ResultStore({
    maxBytes: 10_000,
    maxEntryBytes: 1000,
    ttlMs: 60_000,
    now: () => Date.now(),
  });
  store.set("a", answer("a"));
  await time.tick(59_999);
  assert.ok(store.get("a"));
  await time.tick(1);
  assert.equal(store.get("a"), undefined);
  assert.equal(store.bytes, 0, "an expired entry gives its bytes back");
  const forever = new ResultStore({ maxBytes: 10_000, maxEntryBytes: 1000, ttlMs: 0 });
  forever.set("b", answer("b"));
  await time.tick(365 * 86_400_000);
  assert.ok(forever.get("b"));
});

const PARTS: KeyParts = {
  tenant: "key-a",
  pool: "cpu",
  method: "POST",
  path: "/v1/encode/fixture%2Fdense",
  contentType: "application/json",
  accept: "application/json",
};

function chunks(...parts: string[]) {
  const c = parts.map((p) => new TextEncoder().encode(p));
  return { chunks: c, length: c.reduce((n, b) => n + b.length, 0) };
}

Deno.test("result key: everything that selects an answer is in it; chunking is not", () => {
  const base = resultKey(PARTS, chunks('{"items":[{"text":"hi"}]}'));
  assert.equal(resultKey(PARTS, chunks('{"items":[{"te', 'xt":"hi"}]}')), base);
  const variants: Partial<KeyParts>[] = [
    { tenant: "key-b" },
    { tenant: "" },
    { pool: "gpu" },
    { path: "/v1/encode/fixture%2Fother" },
    { path: "/v1/encode/fixture%2Fdense?x=1" },
    { contentType: "application/msgpack" },
    { accept: "application/msgpack" },
  ];
  for (const v of variants) {
    assert.notEqual(resultKey({ ...PARTS, ...v }, chunks('{"items":[{"text":"hi"}]}')), base);
  }
  assert.notEqual(resultKey(PARTS, chunks('{"items":[{"text":"hi!"}]}')), base);
  assert.notEqual(resultKey(PARTS, null), base);
  // Fields cannot bleed into each other.
  assert.notEqual(
    resultKey({ ...PARTS, tenant: "ab", pool: "c" }, null),
    resultKey({ ...PARTS, tenant: "a", pool: "bc" }, null),
  );
  // The credential is digested, never kept as is.
  assert.ok(!base.includes("key-a"));
});

Deno.test("cache-control: no-store bypasses, no-cache refreshes, anything else uses the cache", () => {
  assert.equal(cacheModeOf(null), "use");
  assert.equal(cacheModeOf("max-age=60"), "use");
  assert.equal(cacheModeOf("no-store"), "bypass");
  assert.equal(cacheModeOf("No-Cache"), "refresh");
  assert.equal(cacheModeOf("no-cache, no-store"), "bypass");
  assert.equal(cacheModeOf('private, no-cache="set-cookie"'), "refresh");
});

function workerAnswer(
  status: number,
  body: WorkerAnswer["body"],
  length?: number,
): WorkerAnswer {
  const headers: WorkerAnswer["headers"] = { "content-type": "application/json" };
  if (length !== undefined) headers["content-length"] = String(length);
  return { kind: "answer", status, statusText: "", headers, body };
}

function streamOf(parts: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < parts.length) c.enqueue(parts[i++]);
      else c.close();
    },
  });
}

Deno.test("capture: a small answer is had at once; a streamed one once the client read it all", async () => {
  const told: (Uint8Array | undefined)[] = [];
  const small = new TextEncoder().encode('{"a":1}');
  const res = captureAnswer(
    workerAnswer(200, small, small.length),
    new Headers(),
    100,
    (b) => told.push(b),
  );
  assert.equal(told.length, 1);
  assert.deepEqual(told[0], small);
  assert.deepEqual(new Uint8Array(await res.arrayBuffer()), small);

  const parts = [new Uint8Array(40).fill(1), new Uint8Array(50).fill(2)];
  const streamed = captureAnswer(
    workerAnswer(200, streamOf(parts), 90),
    new Headers(),
    100,
    (b) => told.push(b),
  );
  assert.equal(told.length, 1, "nothing until the client has it all");
  const sent = new Uint8Array(await streamed.arrayBuffer());
  assert.equal(told.length, 2);
  assert.deepEqual(told[1], sent);
  assert.equal(sent.length, 90);
});

Deno.test("capture: errors, answers over the bound and cut streams are not had", async () => {
  const told: (Uint8Array | undefined)[] = [];
  const tell = (b: Uint8Array | undefined) => told.push(b);
  const err = new TextEncoder().encode('{"detail":{}}');
  await captureAnswer(workerAnswer(500, err), new Headers(), 100, tell).arrayBuffer();
  // Declared over the bound: not watched; undeclared and growing over it: let go mid-way.
  const big = [new Uint8Array(60), new Uint8Array(60)];
  await captureAnswer(workerAnswer(200, streamOf(big), 120), new Headers(), 100, tell)
    .arrayBuffer();
  const grown = captureAnswer(workerAnswer(200, streamOf(big)), new Headers(), 100, tell);
  assert.equal((await grown.arrayBuffer()).byteLength, 120, "the client still gets it all");
  // The client goes away mid-answer.
  const cut = captureAnswer(workerAnswer(200, streamOf(big), 120), new Headers(), 1000, tell);
  const reader = cut.body!.getReader();
  await reader.read();
  await reader.cancel();
  assert.deepEqual(told, [undefined, undefined, undefined, undefined]);
});

Deno.test("flights: one leads, the others follow its landing; a new flight after it lands", async () => {
  const flights = new Flights();
  const lead = flights.lead("k")!;
  assert.ok(lead);
  assert.equal(flights.lead("k"), undefined, "one flight per key");
  const landed = flights.follow("k")!;
  const body = new Uint8Array([1, 2, 3]);
  lead.land({ status: 200, headers: [], body, revision: undefined, producer: "conn-1" });
  assert.deepEqual((await landed)?.body, body);
  assert.equal(flights.size, 0);
  assert.equal(flights.follow("k"), undefined);
  assert.ok(flights.lead("k"));
});

Deno.test("flights: a follower waits no longer than its deadline or its client (fake time)", async () => {
  using time = new FakeTime();
  const flights = new Flights();
  const lead = flights.lead("k")!;
  const timedOut = awaitLanding(flights.follow("k")!, new AbortController().signal, 5000);
  const client = new AbortController();
  const gone = awaitLanding(flights.follow("k")!, client.signal, 5000);
  await time.tick(4999);
  client.abort();
  assert.deepEqual(await gone, { kind: "client_gone" });
  await time.tick(1);
  assert.deepEqual(await timedOut, { kind: "timeout" });
  assert.equal(time.pendingTimers, 0, "nothing of a wait outlives it");
  const failed = awaitLanding(flights.follow("k")!, new AbortController().signal, 5000);
  lead.land(undefined);
  assert.deepEqual(await failed, { kind: "failed" });
  assert.equal(time.pendingTimers, 0);
});
