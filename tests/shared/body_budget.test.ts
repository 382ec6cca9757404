/**
 * The in-flight body budget over a body's whole life (issue 23.4): a request's hold reserves bytes
 * as they arrive and keeps them after the read until its owner releases them; the body that began
 * reading first is served first when bytes run out; a declared length that cannot fit is refused
 * before any byte is read.
 */
import assert from "node:assert/strict";
import { ClientGoneError, ServiceError } from "@svc/shared/errors";
import { BodyBudget } from "@svc/shared/http/body_budget";
import type { BodySource } from "@svc/shared/http/body_source";
import { readSourceChunks, readSourceLimited } from "@svc/shared/http/read_body";

const KiB = 1024;

/** A body source fed by the test: `push` a chunk, `end` it; counts reads and cancels. */
function feed() {
  const queued: (Uint8Array | null)[] = [];
  let waiting: ((c: Uint8Array | null) => void) | undefined;
  const state = { reads: 0, cancelled: false };
  const deliver = (c: Uint8Array | null) => {
    const w = waiting;
    waiting = undefined;
    if (w) w(c);
    else queued.push(c);
  };
  const source: BodySource = {
    read() {
      state.reads++;
      if (state.cancelled) return Promise.resolve(null);
      if (queued.length > 0) return Promise.resolve(queued.shift()!);
      return new Promise((r) => waiting = r);
    },
    cancel() {
      state.cancelled = true;
      deliver(null);
    },
  };
  return {
    source,
    state,
    push: (n: number) => deliver(new Uint8Array(n).fill(7)),
    end: () => deliver(null),
  };
}

/** Let pending reads run. */
const tick = () => new Promise((r) => setTimeout(r, 0));

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected a rejection");
}

Deno.test("body budget: a hold reserves bytes from the first one, keeps them after the read, and gives them back once", async () => {
  const budget = new BodyBudget(100 * KiB);
  const hold = budget.hold();
  const f = feed();
  const read = readSourceChunks(f.source, undefined, { maxBodyBytes: 100 * KiB, hold });
  f.push(10 * KiB);
  await tick();
  assert.equal(budget.used, 10 * KiB, "counted as the first chunk arrives");
  f.push(20 * KiB);
  f.end();
  const body = await read;
  assert.equal(body.length, 30 * KiB);
  assert.deepEqual(body.chunks.map((c) => c.length), [10 * KiB, 20 * KiB], "kept as they came");
  assert.equal(budget.used, 30 * KiB, "still held after the read: the body is still in memory");
  hold.release();
  assert.equal(budget.used, 0);
  hold.release();
  assert.equal(budget.used, 0, "releasing twice gives nothing back twice");
  assert.throws(() => hold.reserve(1), ClientGoneError, "a released hold takes no more bytes");
});

Deno.test("body budget: a failed read gives its bytes back at once, the request's hold included", async () => {
  const budget = new BodyBudget(100 * KiB);
  const hold = budget.hold();
  const f = feed();
  const read = readSourceChunks(f.source, undefined, { maxBodyBytes: 15 * KiB, hold });
  f.push(10 * KiB);
  f.push(10 * KiB); // past SVC_MAX_BODY_BYTES
  const err = await rejection(read);
  assert.ok(err instanceof ServiceError && err.code === "INVALID_INPUT");
  assert.ok(f.state.cancelled, "the source is told to stop");
  assert.equal(budget.used, 0, "what arrived was dropped with the read");
  hold.release();
  assert.equal(budget.used, 0);
});

Deno.test("body budget: without a hold, a read gives its bytes back when it ends, whole or failed", async () => {
  const budget = new BodyBudget(100 * KiB);
  const ok = feed();
  const read = readSourceLimited(ok.source, undefined, { maxBodyBytes: 50 * KiB, budget });
  ok.push(10 * KiB);
  ok.push(10 * KiB);
  await tick();
  assert.ok(budget.used >= 20 * KiB);
  ok.end();
  assert.equal((await read).length, 20 * KiB);
  assert.equal(budget.used, 0);

  const bad = feed();
  const failing = readSourceLimited(bad.source, undefined, { maxBodyBytes: 15 * KiB, budget });
  bad.push(10 * KiB);
  bad.push(10 * KiB);
  await rejection(failing);
  assert.equal(budget.used, 0);
});

Deno.test("body budget: when bytes run out, the bodies that began later are refused, the first completes", async () => {
  const budget = new BodyBudget(100 * KiB);
  const holds = [budget.hold(), budget.hold(), budget.hold()];
  const feeds = [feed(), feed(), feed()];
  const [a, b, c] = feeds;
  const reads = feeds.map((f, i) =>
    readSourceChunks(f.source, undefined, { maxBodyBytes: 100 * KiB, hold: holds[i] })
  );
  const settled = reads.map((p) => p.then(() => "read", (e: Error) => e));
  // Each holds 30 KiB: 90 of 100 in use, and none of them complete.
  for (const f of feeds) f.push(30 * KiB);
  await tick();
  assert.equal(budget.used, 90 * KiB);
  // A later body that needs more is refused itself; the earlier ones keep their bytes.
  b.push(20 * KiB);
  const refusedB = await settled[1];
  assert.ok(refusedB instanceof ServiceError && refusedB.code === "QUEUE_FULL");
  assert.equal(refusedB.retryAfterS, 1);
  assert.equal(budget.used, 60 * KiB);
  // The first needs 50 KiB more: the latest body (c) is refused to make room, not the first.
  a.push(50 * KiB);
  const refusedC = await settled[2];
  assert.ok(refusedC instanceof ServiceError && refusedC.code === "QUEUE_FULL");
  assert.ok(c.state.cancelled, "the refused body's pending read was woken up and stopped");
  a.end();
  assert.equal(await settled[0], "read");
  assert.equal((await reads[0]).length, 80 * KiB);
  assert.equal(budget.used, 80 * KiB, "only the first body is held");
  holds[0].release();
  assert.equal(budget.used, 0);
});

Deno.test("body budget: a declared length that cannot fit now is refused before any byte is read", async () => {
  const budget = new BodyBudget(100 * KiB);
  const held = budget.hold();
  held.reserve(60 * KiB);
  const f = feed();
  const err = await rejection(
    readSourceChunks(f.source, String(50 * KiB), { maxBodyBytes: 100 * KiB, hold: budget.hold() }),
  );
  assert.ok(err instanceof ServiceError && err.code === "QUEUE_FULL");
  assert.match(err.message, /SVC_MAX_INFLIGHT_BODY_BYTES/);
  assert.equal(f.state.reads, 0, "not one byte was read");
  // A declared length that fits is only a claim: nothing is reserved before bytes arrive.
  const g = feed();
  const read = readSourceChunks(g.source, String(40 * KiB), {
    maxBodyBytes: 100 * KiB,
    hold: budget.hold(),
  });
  await tick();
  assert.equal(budget.used, 60 * KiB);
  g.push(1 * KiB);
  g.end();
  assert.equal((await read).length, 1 * KiB);
  assert.equal(budget.used, 61 * KiB);
  held.release();
});
