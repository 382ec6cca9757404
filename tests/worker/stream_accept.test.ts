/**
 * The worker's side of the connection transport (worker/fleet/streams/accept.ts): a stream whose
 * answer went out before its body was read is freed, and a cancelled body read settles at once.
 */
import assert from "node:assert/strict";
import type { StreamGrant } from "@svc/shared/fleet/protocol";
import { decodeFrame, FRAME, headFrame } from "@svc/shared/fleet/streams/frames";
import { acceptStreams } from "#worker/fleet/streams/accept.ts";

const GRANT: StreamGrant = { window: 1 << 20, connection_window: 16 << 20, max_streams: 4 };
const silent = () => {};
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("stream accept: answers that never read their body free their streams", async () => {
  const sent: Uint8Array[] = [];
  const socket = { send: (d: Uint8Array) => void sent.push(d), bufferedAmount: 0 };
  const violations: string[] = [];
  // An early refusal (a wrong key, a drain) answers without reading the body.
  const mux = acceptStreams(
    socket,
    GRANT,
    () => Promise.resolve({ status: 401, headers: {}, body: new Uint8Array(3) }),
    silent,
    (why) => violations.push(why),
  );
  try {
    // More requests than max_streams, each with its whole body and END in the head frame.
    for (let id = 1; id <= 2 * GRANT.max_streams; id += 1) {
      const head = { method: "POST", path: "/v1/encode/x", headers: {} };
      mux.receive(headFrame(id, head, new Uint8Array(100), true).buffer as ArrayBuffer);
      await tick(10);
    }
    assert.deepEqual(violations, []);
    assert.equal(mux.openStreams, 0, "every stream freed once its answer was out");
    const answered = sent.map((f) => decodeFrame(f, 1 << 22)).filter((d) =>
      d.ok && d.frame.type === FRAME.head
    );
    assert.equal(answered.length, 2 * GRANT.max_streams, "every request got its answer");
  } finally {
    mux.close();
  }
});

Deno.test("stream accept: cancelling the body settles a pending read", async () => {
  const socket = { send: silent, bufferedAmount: 0 };
  let read: Promise<Uint8Array | null> | undefined;
  const mux = acceptStreams(
    socket,
    GRANT,
    async (req) => {
      // The body reader's idle timeout cancels a read that waits for bytes that never come.
      read = req.body!.read();
      await tick(10);
      req.body!.cancel();
      return { status: 408, headers: {}, body: new Uint8Array(0) };
    },
    silent,
    silent,
  );
  try {
    const head = { method: "POST", path: "/v1/encode/x", headers: {} };
    mux.receive(headFrame(1, head, new Uint8Array(0), false).buffer as ArrayBuffer);
    await tick(30);
    assert.ok(read, "the handler ran");
    const settled = await Promise.race([read, tick(500).then(() => "pending" as const)]);
    assert.equal(settled, null, "the read ended at the cancel");
  } finally {
    mux.close();
  }
});
