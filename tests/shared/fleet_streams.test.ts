/**
 * The stream multiplexer of the fleet connection (shared/fleet/streams/): two ends wired through
 * sockets that deliver on a later turn and report what they hold, as the WebSocket does.
 */
import assert from "node:assert/strict";
import {
  type FrameSink,
  MAX_STREAM_FRAME_BYTES,
  type MuxOptions,
  StreamMux,
} from "@svc/shared/fleet/streams/mux";
import { dataFrame, decodeFrame, headFrame, RESET } from "@svc/shared/fleet/streams/frames";

/** A socket to `peer` that delivers each frame on a later turn and counts what it holds. */
class Pipe implements FrameSink {
  bufferedAmount = 0;
  sent = 0;
  peer: StreamMux | undefined;
  closed = false;
  send(frame: Uint8Array): void {
    if (this.closed) throw new Error("closed");
    this.bufferedAmount += frame.length;
    this.sent += frame.length;
    const copy = frame.slice();
    setTimeout(() => {
      this.bufferedAmount -= copy.length;
      this.peer?.receive(copy);
    }, 0);
  }
}

const WINDOWS = { stream: 64 * 1024, connection: 256 * 1024 };

function pair(onOpen: MuxOptions["onOpen"], violations: string[] = []) {
  const toWorker = new Pipe();
  const toRouter = new Pipe();
  const base = { receive: WINDOWS, send: WINDOWS, maxStreams: 8, maxFrameBytes: 256 * 1024 };
  const router = new StreamMux({
    ...base,
    role: "opener",
    sink: toWorker,
    onViolation: (r) => violations.push(`router: ${r}`),
  });
  const worker = new StreamMux({
    ...base,
    role: "acceptor",
    sink: toRouter,
    onOpen,
    onViolation: (r) => violations.push(`worker: ${r}`),
  });
  toWorker.peer = worker;
  toRouter.peer = router;
  return { router, worker, toWorker, toRouter };
}

async function readAll(read: () => Promise<Uint8Array | null>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for (;;) {
    const c = await read();
    if (c === null) break;
    parts.push(c);
  }
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function bytes(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

Deno.test("a request and its answer cross intact, bigger than every window", async () => {
  const big = bytes(1_000_000);
  const { router } = pair(async (s, head) => {
    const body = await readAll(() => s.read());
    s.sendHead({ echo: head, n: body.length }, [body], true);
  });
  const answered = Promise.withResolvers<unknown>();
  const s = router.open({ head: (h) => answered.resolve(h) })!;
  s.sendHead({ path: "/x" }, [big.subarray(0, 10), big.subarray(10)], true);
  assert.deepEqual(await answered.promise, { echo: { path: "/x" }, n: big.length });
  const back = await readAll(() => s.read());
  assert.deepEqual(back, big);
  assert.ok(s.delivered);
  assert.equal(router.openStreams, 0);
});

Deno.test("a small request is not held up behind a big upload that is not read", async () => {
  const { router } = pair(async (s, head) => {
    // The upload's handler never reads: its stream window fills, the connection's does not.
    if ((head as { path: string }).path === "/big") return;
    const body = await readAll(() => s.read());
    s.sendHead({ n: body.length }, [], true);
  });
  const big = router.open({})!;
  big.sendHead({ path: "/big" }, [bytes(10_000_000)], true);
  const answered = Promise.withResolvers<unknown>();
  const small = router.open({ head: (h) => answered.resolve(h) })!;
  small.sendHead({ path: "/small" }, [bytes(100)], true);
  assert.deepEqual(await answered.promise, { n: 100 });
  // The upload waits within its own window.
  assert.ok(big.queuedBytes >= 10_000_000 - WINDOWS.stream, String(big.queuedBytes));
  big.reset();
});

Deno.test("a reset reaches the other side's reader and its owner", async () => {
  const opened = Promise.withResolvers<Error>();
  const { router } = pair(async (s) => {
    opened.resolve(await s.read().then(() => s.read()).then(() => new Error("no"), (e) => e));
  });
  const s = router.open({})!;
  s.sendHead({}, [bytes(10)], false);
  await new Promise((r) => setTimeout(r, 5));
  s.reset(RESET.cancel);
  assert.match((await opened.promise).message, /stream reset \(0\)/);
});

Deno.test("a peer that sends past its credit or names an unknown stream is a violation", () => {
  const violations: string[] = [];
  const { router, worker } = pair(() => {}, violations);
  // Unknown stream to the router (never opened).
  router.receive(headFrame(7, { status: 200 }, new Uint8Array(), true));
  assert.deepEqual(violations, ["router: HEAD for a stream never opened"]);
  assert.ok(router.closed);
  // Past the stream's credit.
  worker.receive(headFrame(1, {}, new Uint8Array(), false));
  worker.receive(dataFrame(1, bytes(WINDOWS.stream + 1), false));
  assert.equal(violations[1], "worker: body bytes past the stream's credit");
  assert.ok(worker.closed);
});

Deno.test("closing a connection fails its streams' readers and tells their owners", async () => {
  const { router } = pair(() => {});
  const lost = Promise.withResolvers<number | undefined>();
  const s = router.open({ aborted: (code) => lost.resolve(code) })!;
  s.sendHead({}, [], true);
  router.close();
  assert.equal(await lost.promise, undefined);
  await assert.rejects(s.read(), /connection lost/);
});

Deno.test("malformed frames are refused by the decoder", () => {
  assert.equal(decodeFrame(new Uint8Array(3), 100).ok, false);
  assert.equal(decodeFrame(new Uint8Array(200), 100).ok, false);
  const f = headFrame(1, { a: 1 }, bytes(4), true);
  f[1] = 0x80;
  assert.equal(decodeFrame(f, 1000).ok, false);
});

Deno.test("an opener that used every stream id asks for a new connection once its streams end", async () => {
  const toWorker = new Pipe();
  let usedUp = 0;
  const router = new StreamMux({
    role: "opener",
    receive: WINDOWS,
    send: WINDOWS,
    maxStreams: 8,
    maxFrameBytes: 256 * 1024,
    sink: toWorker,
    onViolation: () => {},
    onIdsUsedUp: () => usedUp++,
    maxStreamId: 2,
  });
  const worker = new StreamMux({
    role: "acceptor",
    receive: WINDOWS,
    send: WINDOWS,
    maxStreams: 8,
    maxFrameBytes: 256 * 1024,
    sink: new Pipe(),
    onOpen: (s) => s.reset(),
    onViolation: () => {},
  });
  toWorker.peer = worker;
  const a = router.open({})!;
  const b = router.open({})!;
  assert.equal(router.open({}), undefined, "no third id");
  assert.equal(usedUp, 0, "streams still open");
  a.reset();
  b.reset();
  assert.equal(usedUp, 1);
  await new Promise((r) => setTimeout(r, 5));
});

Deno.test("a stream reset before its head left ends here alone: the peer never hears of it", () => {
  const violations: string[] = [];
  let toB: (f: Uint8Array) => void = () => {};
  const sent: Uint8Array[] = [];
  // The opener's socket is over its high-water mark: heads wait in the queue.
  const a = new StreamMux({
    role: "opener",
    receive: WINDOWS,
    send: WINDOWS,
    maxStreams: 10,
    maxFrameBytes: MAX_STREAM_FRAME_BYTES,
    sink: { send: (f) => (sent.push(f), toB(f)), bufferedAmount: 10_000_000 },
    onViolation: (r) => violations.push(`a: ${r}`),
  });
  const b = new StreamMux({
    role: "acceptor",
    receive: WINDOWS,
    send: WINDOWS,
    maxStreams: 10,
    maxFrameBytes: MAX_STREAM_FRAME_BYTES,
    sink: { send: () => {}, bufferedAmount: 0 },
    onViolation: (r) => violations.push(`b: ${r}`),
    onOpen: () => {},
  });
  toB = (f) => b.receive(f);
  try {
    const s = a.open({})!;
    s.sendHead({ method: "POST" }, [bytes(10)], true);
    s.reset();
    assert.deepEqual(violations, []);
    assert.equal(sent.length, 0, "no RESET of an id the peer never saw");
    assert.equal(a.openStreams, 0, "the stream is gone here");
  } finally {
    a.close();
    b.close();
  }
});
