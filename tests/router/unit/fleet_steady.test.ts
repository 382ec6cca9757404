/**
 * A fleet at rest (issue 38): a status frame that repeats what the router knows moves only the
 * worker's last_seen (no directory write, the snapshot the views read stays the same), a delta
 * frame changes only the models it lists, and the shortcut never lets through what a full decode
 * would refuse.
 */
import assert from "node:assert/strict";
import type { StatusMessage } from "@svc/shared/fleet/protocol";
import { FakeTime } from "../../helpers/fake_time.ts";
import { pingTime, withoutSeq } from "#router/fleet/frames.ts";
import { REFUSALS } from "#router/fleet/refusals.ts";
import { registerFrame } from "../helpers/rogue_worker.ts";
import { connection } from "../helpers/fleet_connection.ts";

const MODELS = ["org/a", "org/b", "org/c"];

/** A status frame with every model of {@link MODELS}, `a` loaded with `queue` waiting. */
function status(seq: number, queue: number): StatusMessage {
  return {
    type: "status",
    seq,
    models: MODELS.map((name, i) => ({
      name,
      state: i === 0 ? "loaded" : "available",
      queue_depth: i === 0 ? queue : 0,
    })),
    queue_depth: queue,
    in_flight: 0,
    memory_used_bytes: 100,
    memory_total_bytes: 1000,
    draining: false,
  };
}

/** A registered connection that has sent one full status frame. */
async function registered(time: FakeTime) {
  const c = await connection();
  c.socket.deliver(registerFrame("w-steady", "http://127.0.0.1:9101", {
    models: MODELS.map((name) => ({ name, bundle: "default", state: "available" })),
  }));
  await time.tick(1);
  c.socket.deliver(status(0, 2));
  await time.tick(1);
  assert.equal(c.conn.record?.queue_depth, 2);
  return c;
}

Deno.test("fleet steady state: a repeated status frame moves last_seen only; views keep their snapshot", async () => {
  using time = new FakeTime();
  const { socket, conn, directory } = await registered(time);
  const puts = directory.puts;
  const before = directory.snapshot();
  const seenBefore = before[0].last_seen;
  await time.tick(700);
  socket.deliver(status(1, 2));
  await time.tick(1);
  assert.equal(directory.puts, puts, "nothing written");
  assert.equal(directory.touches, 1);
  const after = directory.snapshot();
  assert.equal(after, before, "the same snapshot: nothing to rebuild");
  assert.ok(after[0].last_seen >= seenBefore + 700, "the worker is seen alive");
  assert.equal(socket.closeCode(), undefined);

  // The same content written another way (keys in another order) is decoded, and found the same.
  const { seq: _s, ...rest } = status(2, 2);
  socket.deliver(JSON.stringify({ ...rest, seq: 2 }));
  await time.tick(1);
  assert.equal(directory.puts, puts);
  assert.equal(directory.touches, 2);

  // A frame that changes something is written, and the snapshot is a new one.
  socket.deliver(status(3, 5));
  await time.tick(1);
  assert.equal(directory.puts, puts + 1);
  assert.equal(directory.snapshot()[0].queue_depth, 5);
  assert.notEqual(directory.snapshot(), before);
  await conn.drop("test end");
});

Deno.test("fleet steady state: a delta frame changes the models it lists; the others keep their state", async () => {
  using time = new FakeTime();
  const { socket, conn, directory } = await registered(time);
  const models = conn.record!.models;
  socket.deliver({
    ...status(1, 0),
    models: [{ name: "org/b", state: "loading", queue_depth: 1 }],
  });
  await time.tick(1);
  const now = directory.snapshot()[0].models;
  assert.deepEqual(
    now.map((m) => [m.name, m.state, m.queue_depth]),
    [["org/a", "loaded", 2], ["org/b", "loading", 1], ["org/c", "available", 0]],
  );
  assert.equal(now[0], models[0], "a model the frame left out is the same entry");
  assert.equal(now[2], models[2]);
  // An empty delta with the same totals says nothing new.
  const puts = directory.puts;
  socket.deliver({ ...status(2, 0), models: [] });
  await time.tick(1);
  assert.equal(directory.puts, puts);
  await conn.drop("test end");
});

Deno.test("fleet steady state: what a full decode refuses is refused after a repeat too", async () => {
  using time = new FakeTime();
  const { socket, conn } = await registered(time);
  // The same frame with a seq that is not a count: the shortcut does not apply, the decode refuses.
  socket.deliver(JSON.stringify(status(1, 2)).replace('"seq":1', '"seq":-1'));
  await time.tick(1);
  assert.deepEqual(socket.errors(), [REFUSALS.invalidFrame.code]);
  assert.ok(conn.closed || conn.refused);
});

Deno.test("fleet steady state: only the encoder's own forms take the shortcut", () => {
  assert.equal(
    withoutSeq('{"type":"status","seq":12,"models":[]}'),
    '{"type":"status","seq":,"models":[]}',
  );
  assert.equal(withoutSeq('{"type":"status","seq": 12}'), undefined, "spaces: decoded in full");
  assert.equal(withoutSeq('{"seq":1.5}'), undefined);
  assert.equal(withoutSeq('{"seq":01}'), undefined);
  assert.equal(withoutSeq('{"seq":1234567890123456}'), undefined, "past a safe count");
  assert.equal(withoutSeq('{"n":"\\"seq\\":1"}'), undefined, "inside a string it is no key");
  assert.equal(pingTime('{"type":"ping","t":1732850000123}'), 1732850000123);
  assert.equal(pingTime('{"type":"ping","t":-2.5}'), -2.5);
  assert.equal(pingTime('{"type":"ping","t":1,"x":1}'), undefined);
  assert.equal(pingTime('{"type":"ping","t":"1"}'), undefined);
  assert.equal(pingTime('{"type":"pong","t":1}'), undefined);
});
