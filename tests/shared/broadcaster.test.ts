/**
 * The status-stream ticker on a fake clock: one build per period whatever the number of clients,
 * a first frame at once, slow readers skipped, and no ticking without clients. The real streams
 * (tests/observability, tests/e2e/observability) only check that frames flow; the cadence is checked here, exactly.
 */
import assert from "node:assert/strict";
import { Broadcaster } from "@svc/shared/dashboard/broadcaster";
import { FakeTime } from "../helpers/fake_time.ts";

/** The part of a WebSocket the broadcaster uses; records what it was sent. */
class FakeSocket extends EventTarget {
  readyState: number = WebSocket.OPEN;
  bufferedAmount = 0;
  sent: string[] = [];

  send(data: string): void {
    this.sent.push(data);
  }

  close(): void {
    this.readyState = WebSocket.CLOSED;
    this.dispatchEvent(new Event("close"));
  }
}

function broadcaster(intervalMs = 200) {
  let n = 0;
  const b = new Broadcaster({ intervalMs, build: () => `frame ${n++}` });
  const join = () => {
    const s = new FakeSocket();
    b.add(s as unknown as WebSocket);
    return s;
  };
  return { b, join };
}

Deno.test("broadcaster: a frame at once, then one per period", async () => {
  using time = new FakeTime();
  const { b, join } = broadcaster(200);
  const s = join();
  await time.tick(0);
  assert.deepEqual(s.sent, ["frame 0"], "first frame without waiting a period");
  await time.tick(199);
  assert.equal(s.sent.length, 1);
  await time.tick(1);
  assert.deepEqual(s.sent, ["frame 0", "frame 1"]);
  await time.tick(1000);
  assert.equal(s.sent.length, 7, "5 frames per second");
  b.close();
});

Deno.test("broadcaster: forty clients cost one build per tick and get the same bytes", async () => {
  using time = new FakeTime();
  const { b, join } = broadcaster(200);
  const clients = Array.from({ length: 40 }, join);
  await time.tick(1000);
  assert.equal(b.clientCount, 40);
  assert.equal(b.buildCount, 6, "the first frame plus 5 ticks, not 40 × 6");
  for (const c of clients) assert.deepEqual(c.sent, clients[0].sent);
  b.close();
});

Deno.test("broadcaster: a client that stops reading skips frames; the ticker stops with the last client", async () => {
  using time = new FakeTime();
  const { b, join } = broadcaster(200);
  const slow = join();
  const fast = join();
  await time.tick(0);
  slow.bufferedAmount = 2 << 20; // more than the 1 MiB default
  await time.tick(400);
  assert.equal(slow.sent.length, 1, "nothing more while its buffer is full");
  assert.equal(fast.sent.length, 3);
  slow.close();
  fast.close();
  assert.equal(b.ticking, false);
  const builds = b.buildCount;
  await time.tick(1000);
  assert.equal(b.buildCount, builds, "no builds without clients");
  assert.equal(time.pendingTimers, 0);
});
