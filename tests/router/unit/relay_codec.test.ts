/**
 * The relay's storage format (router/fleet/relay/): bodies cut under KV's 64 KiB value limit and
 * committed under its 800 KiB commit limit, read back only whole, heads validated, credentials
 * never carried, and waits for a key bounded by time and by an abort signal.
 */
import assert from "node:assert/strict";
import {
  CHUNK_BYTES,
  chunkCount,
  COMMIT_BYTES,
  commitGroups,
  parseAnswerHead,
  parseRequestHead,
  relayedHeaders,
  splitBody,
} from "#router/fleet/relay/codec.ts";
import { deleteChunks, readChunks, writeChunks } from "#router/fleet/relay/store.ts";
import { joinChunks } from "#router/proxy/join_chunks.ts";
import { waitForKey } from "#router/fleet/relay/wait.ts";

function bytes(n: number, seed = 7): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

Deno.test("relay codec: bodies split under the value limit, commits under the commit limit", () => {
  assert.deepEqual(splitBody([]), []);
  // Pieces as they arrived, of any size: as few values as the size allows, the bytes in order.
  const arrived = [bytes(10, 1), bytes(2 * CHUNK_BYTES + 5, 2), bytes(CHUNK_BYTES, 3)];
  const parts = splitBody(arrived);
  assert.deepEqual(parts.map((p) => p.length), [CHUNK_BYTES, CHUNK_BYTES, CHUNK_BYTES, 15]);
  assert.equal(parts.length, chunkCount(3 * CHUNK_BYTES + 15));
  assert.deepEqual(
    joinChunks(parts, 3 * CHUNK_BYTES + 15),
    joinChunks(arrived, 3 * CHUNK_BYTES + 15),
  );
  assert.ok(CHUNK_BYTES + 1024 < 65_536, "a chunk and its encoding fit one KV value");
  assert.ok(COMMIT_BYTES + 64 * 1024 < 819_200, "a commit of chunks and a head fits");
  const big = splitBody([bytes(5 * 1024 * 1024)]);
  const groups = commitGroups(big);
  assert.deepEqual(groups.flat(), big.map((_, i) => i), "every chunk once, in order");
  for (const g of groups) {
    assert.ok(g.reduce((n, i) => n + big[i].length, 0) <= COMMIT_BYTES);
  }
  assert.deepEqual(commitGroups([]), []);
});

Deno.test("relay codec: heads are validated; credentials never reach a worker", () => {
  const head = {
    asker: "router-a",
    worker_id: "w1",
    method: "POST",
    path: "/v1/encode/x",
    headers: { "content-type": "application/json" },
    body_bytes: 3,
    body_chunks: 1,
    deadline: Date.now() + 1000,
  };
  assert.deepEqual(parseRequestHead(head), head);
  assert.equal(parseRequestHead({ ...head, path: "http://evil/" }), undefined);
  assert.equal(parseRequestHead({ ...head, body_bytes: -1 }), undefined);
  // A chunk count that disagrees with the size (a holder would delete a billion keys): refused.
  assert.equal(parseRequestHead({ ...head, body_chunks: 1e9 }), undefined);
  assert.equal(
    parseAnswerHead({ kind: "answer", status: 200, headers: [], body_bytes: 0, body_chunks: 2 }),
    undefined,
  );
  assert.equal(parseRequestHead("nope"), undefined);
  assert.equal(parseAnswerHead({ kind: "answer", status: 99, headers: [] }), undefined);
  assert.deepEqual(parseAnswerHead({ kind: "timeout" }), { kind: "timeout" });
  const out = relayedHeaders({
    "Content-Type": "application/json",
    authorization: "Bearer client-key",
    cookie: "a=b",
    "x-trace-id": "t1",
  });
  assert.deepEqual(out, { "content-type": "application/json", "x-trace-id": "t1" });
});

Deno.test("relay store: a 2 MB body round-trips; a missing chunk is no body", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const body = bytes(2 * 1024 * 1024 + 17);
    const chunks = splitBody([body]);
    const last = kv.atomic().set(["head"], 1);
    assert.ok(await writeChunks(kv, ["b"], chunks, 60_000, last));
    assert.ok((await last.commit()).ok);
    assert.deepEqual(await readChunks(kv, ["b"], chunks.length, body.length), body);
    assert.equal(await readChunks(kv, ["b"], chunks.length, body.length - 1), undefined);
    await kv.delete(["b", 3]);
    assert.equal(await readChunks(kv, ["b"], chunks.length, body.length), undefined);
    await deleteChunks(kv, ["b"], chunks.length);
    let left = 0;
    for await (const _ of kv.list({ prefix: ["b"] })) left++;
    assert.equal(left, 0);
    assert.deepEqual(await readChunks(kv, ["b"], 0, 0), new Uint8Array(0));
  } finally {
    kv.close();
  }
});

Deno.test("relay wait: a value, a timeout and an abort each end the wait", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    setTimeout(() => kv.set(["k"], "v"), 30);
    const got = await waitForKey(kv, ["k"], { pollMs: 5000, untilMs: Date.now() + 5000 });
    assert.equal(got.kind === "value" && got.entry.value, "v", "the watch saw the write");
    const t0 = Date.now();
    const none = await waitForKey(kv, ["none"], { pollMs: 20, untilMs: Date.now() + 100 });
    assert.equal(none.kind, "timeout");
    assert.ok(Date.now() - t0 < 2000);
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 30);
    const gone = await waitForKey(kv, ["none"], {
      pollMs: 20,
      untilMs: Date.now() + 10_000,
      signal: ctl.signal,
    });
    assert.equal(gone.kind, "aborted");
  } finally {
    kv.close();
  }
});
