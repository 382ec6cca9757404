/**
 * The router's side of a request over a worker's connection (router/proxy/stream_upstream.ts):
 * what a client or a worker sends must not close the connection for everyone, nor be buffered
 * past what the answer declared.
 */
import assert from "node:assert/strict";
import { type FrameSink, MAX_STREAM_FRAME_BYTES, StreamMux } from "@svc/shared/fleet/streams/mux";
import { sendOverStream } from "#router/proxy/stream_upstream.ts";

const WINDOWS = { stream: 64 * 1024, connection: 256 * 1024 };

/** A socket to `peer` that delivers each frame on a later turn. */
class Pipe implements FrameSink {
  bufferedAmount = 0;
  peer: StreamMux | undefined;
  send(frame: Uint8Array): void {
    const copy = frame.slice();
    setTimeout(() => this.peer?.receive(copy), 0);
  }
}

/** A router (opener) and a worker (acceptor) joined by pipes; the worker answers with `answer`. */
function pair(answer: (s: import("@svc/shared/fleet/streams/mux").MuxStream) => void) {
  const violations: string[] = [];
  const toWorker = new Pipe();
  const toRouter = new Pipe();
  const base = { receive: WINDOWS, send: WINDOWS, maxStreams: 8 };
  const router = new StreamMux({
    ...base,
    role: "opener",
    maxFrameBytes: MAX_STREAM_FRAME_BYTES,
    sink: toWorker,
    onViolation: (r) => violations.push(`router: ${r}`),
  });
  const worker = new StreamMux({
    ...base,
    role: "acceptor",
    maxFrameBytes: MAX_STREAM_FRAME_BYTES,
    sink: toRouter,
    onOpen: (s) => answer(s),
    onViolation: (r) => violations.push(`worker: ${r}`),
  });
  toWorker.peer = worker;
  toRouter.peer = router;
  return { router, worker, violations };
}

function request(headers: Record<string, string>, body = new Uint8Array(70 * 1024)) {
  return {
    base: "",
    method: "POST",
    path: "/v1/encode/fixture/dense",
    headers,
    body: { chunks: [body], length: body.length },
    signal: new AbortController().signal,
  };
}

Deno.test("stream upstream: a head too large for the worker is a 400 here, the link stays", async () => {
  let opened = 0;
  const { router, worker, violations } = pair(() => opened++);
  try {
    const out = await sendOverStream(
      router,
      request({ accept: "x".repeat(40 * 1024) }),
      (r) => violations.push(`violation: ${r}`),
    );
    assert.equal(out.kind, "answer");
    assert.equal(out.kind === "answer" && out.status, 400);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(opened, 0, "nothing reached the worker");
    assert.deepEqual(violations, []);
    assert.equal(router.closed, false);
  } finally {
    router.close();
    worker.close();
  }
});

Deno.test("stream upstream: an answer longer than its content-length is not buffered", async () => {
  const { router, worker, violations } = pair((s) => {
    // Declares 10 bytes, then sends far more.
    s.sendHead({ status: 200, headers: { "content-length": "10" } }, [], false);
    s.write([new Uint8Array(48 * 1024), new Uint8Array(48 * 1024)], true);
  });
  const reported: string[] = [];
  try {
    const out = await sendOverStream(router, request({}, new Uint8Array(8)), (r) => {
      reported.push(r);
    });
    assert.equal(out.kind, "dropped");
    assert.deepEqual(reported, ["an answer longer than its content-length"]);
    assert.deepEqual(violations, []);
  } finally {
    router.close();
    worker.close();
  }
});
