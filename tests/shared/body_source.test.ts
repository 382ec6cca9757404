/** The node:http body source: order, backpressure, the end, a client that goes away, cancel. */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { nodeBodySource, type NodeReadable } from "@svc/shared/http/body_source";

/** An IncomingMessage stand-in that records pause/resume and emits what the test says. */
class FakeIncoming extends EventEmitter implements NodeReadable {
  paused = false;
  pauses = 0;
  pause(): this {
    this.paused = true;
    this.pauses++;
    return this;
  }
  resume(): this {
    this.paused = false;
    return this;
  }
  send(text: string): void {
    this.emit("data", new TextEncoder().encode(text));
  }
}

class GoneError extends Error {}

const text = (b: Uint8Array | null) => b === null ? null : new TextDecoder().decode(b);

Deno.test("body source: chunks that arrive before a read wait paused, in order, then the end", async () => {
  const inc = new FakeIncoming();
  const src = nodeBodySource(inc, () => new GoneError(), () => {});
  inc.send("ab");
  assert.equal(inc.paused, true, "an unread chunk pauses the socket");
  inc.send("cd"); // already in flight when the pause came
  inc.emit("end");
  assert.equal(text(await src.read()), "ab");
  assert.equal(text(await src.read()), "cd");
  assert.equal(await src.read(), null);
  assert.equal(await src.read(), null, "the end stays the end");
});

Deno.test("body source: a waiting read takes the next chunk without pausing the socket", async () => {
  const inc = new FakeIncoming();
  const src = nodeBodySource(inc, () => new GoneError(), () => {});
  const first = src.read();
  inc.send("xyz");
  assert.equal(text(await first), "xyz");
  assert.equal(inc.pauses, 0);
  const last = src.read();
  inc.emit("end");
  assert.equal(await last, null);
});

Deno.test("body source: a client gone mid-body rejects the waiting read and later ones", async () => {
  const inc = new FakeIncoming();
  const src = nodeBodySource(inc, () => new GoneError(), () => {});
  inc.send("a");
  assert.equal(text(await src.read()), "a");
  const waiting = src.read();
  inc.emit("aborted");
  await assert.rejects(waiting, GoneError);
  await assert.rejects(src.read(), GoneError);
});

Deno.test("body source: an abort after the end is not a failure", async () => {
  const inc = new FakeIncoming();
  const src = nodeBodySource(inc, () => new GoneError(), () => {});
  inc.send("done");
  inc.emit("end");
  inc.emit("aborted");
  assert.equal(text(await src.read()), "done");
  assert.equal(await src.read(), null);
});

Deno.test("body source: cancel ends a waiting read, drops queued and later bytes, tells the server once", async () => {
  const inc = new FakeIncoming();
  let cancels = 0;
  const src = nodeBodySource(inc, () => new GoneError(), () => cancels++);
  const waiting = src.read();
  src.cancel();
  assert.equal(await waiting, null);
  inc.send("late");
  assert.equal(await src.read(), null);
  src.cancel();
  assert.equal(cancels, 1);
});

Deno.test("body source: a chunk delivered from inside resume() reaches the waiting read", async () => {
  // Node defers what resume() releases; a readable that emits at once must not hang the read.
  class EagerIncoming extends FakeIncoming {
    held: string[] = [];
    override resume(): this {
      super.resume();
      const next = this.held.shift();
      if (next !== undefined) this.send(next);
      return this;
    }
  }
  const inc = new EagerIncoming();
  const src = nodeBodySource(inc, () => new GoneError(), () => {});
  inc.held.push("now");
  assert.equal(text(await src.read()), "now");
});
