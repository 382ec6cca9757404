/**
 * One worker socket held by the router (router/fleet/connection.ts), driven by a scripted socket
 * and fake time, as the worker's side (worker/fleet/session.ts) is tested: registration and its
 * deadline, the frame rate, frames out of order, status and drain, and how each way of closing
 * reads to the worker (the refusal table's error code and close code) and to the directory.
 */
import assert from "node:assert/strict";
import { FakeTime } from "../../helpers/fake_time.ts";
import { REGISTRATION_TIMEOUT_MS } from "#router/fleet/connection.ts";
import { REFUSALS } from "#router/fleet/refusals.ts";
import { registerFrame, statusFrame } from "../helpers/rogue_worker.ts";
import { connection } from "../helpers/fleet_connection.ts";

Deno.test("fleet connection: a register frame is answered and the worker is in the directory", async () => {
  using time = new FakeTime();
  const { socket, conn, directory, hub } = await connection();
  socket.deliver(registerFrame("w-1", "http://127.0.0.1:9001"));
  await time.tick(1);
  const reply = socket.sent.find((m) => m.type === "registered");
  assert.ok(reply, JSON.stringify(socket.sent));
  assert.ok(conn.record, "registered");
  assert.equal(hub.byWorker.get(conn.record!.id), conn);
  assert.deepEqual(directory.snapshot().map((w) => w.url), ["http://127.0.0.1:9001"]);
  // Past the registration deadline nothing happens to a registered socket.
  await time.tick(REGISTRATION_TIMEOUT_MS * 2);
  assert.equal(socket.closeCode(), undefined);
  await conn.drop("test end");
});

Deno.test("fleet connection: no register frame in time is refused with the table's codes", async () => {
  using time = new FakeTime();
  const { socket, conn } = await connection();
  await time.tick(REGISTRATION_TIMEOUT_MS - 1);
  assert.equal(socket.closeCode(), undefined, "not before the deadline");
  await time.tick(1);
  assert.deepEqual(socket.errors(), [REFUSALS.registrationTimeout.code]);
  assert.equal(socket.closeCode(), REFUSALS.registrationTimeout.close);
  assert.ok(socket.paused, "a refused socket is no longer read");
  assert.ok(conn.refused);
});

Deno.test("fleet connection: status before register, and an invalid frame, are refused", async () => {
  using time = new FakeTime();
  const early = await connection();
  early.socket.deliver(statusFrame(1, ["fixture/dense"]));
  await time.tick(1);
  assert.deepEqual(early.socket.errors(), [REFUSALS.notRegistered.code]);
  assert.equal(early.socket.closeCode(), REFUSALS.notRegistered.close);

  const garbled = await connection();
  garbled.socket.deliver("{not json");
  await time.tick(1);
  assert.deepEqual(garbled.socket.errors(), [REFUSALS.invalidFrame.code]);
  assert.equal(garbled.socket.closeCode(), REFUSALS.invalidFrame.close);
});

Deno.test("fleet connection: more frames in a second than the cap close the socket; frames queued are not read", async () => {
  using time = new FakeTime();
  const { socket, conn } = await connection(5);
  socket.deliver(registerFrame("w-2", "http://127.0.0.1:9002"));
  await time.tick(1);
  assert.ok(conn.record);
  // The register frame counted in this second's window: four more fit, the fifth more does not.
  for (let i = 0; i < 4; i++) socket.deliver({ ...statusFrame(i, []), queue_depth: i + 1 });
  assert.equal(socket.closeCode(), undefined);
  socket.deliver({ type: "ping", t: 99 });
  assert.deepEqual(socket.errors(), [REFUSALS.rateLimited.code]);
  assert.equal(socket.closeCode(), REFUSALS.rateLimited.close);
  await time.tick(1);
  // The status frames queued before the refusal were dropped unread: none reached the record.
  assert.equal(conn.record?.queue_depth, 0);
  assert.equal(socket.sent.filter((m) => m.type === "pong").length, 0);
  assert.ok(conn.closed, "dropped after the refusal");
});

Deno.test("fleet connection: a new second's window starts the count again", async () => {
  using time = new FakeTime();
  const { socket, conn } = await connection(3);
  socket.deliver(registerFrame("w-3", "http://127.0.0.1:9003"));
  socket.deliver({ type: "ping", t: 1 });
  socket.deliver({ type: "ping", t: 2 });
  await time.tick(1000);
  socket.deliver({ type: "ping", t: 3 });
  socket.deliver({ type: "ping", t: 4 });
  socket.deliver({ type: "ping", t: 5 });
  await time.tick(1);
  assert.equal(socket.closeCode(), undefined);
  await conn.drop("test end");
});

Deno.test("fleet connection: a ping is answered once the router has said nothing for a third of the stale bound", async () => {
  using time = new FakeTime();
  const { socket, conn } = await connection();
  socket.deliver(registerFrame("w-3", "http://127.0.0.1:9003"));
  await time.tick(1);
  const pongs = () => socket.sent.flatMap((m) => m.type === "pong" ? [m.t] : []);
  // The `registered` frame was just sent: the worker has heard from the router.
  socket.deliver({ type: "ping", t: 1 });
  await time.tick(1);
  assert.deepEqual(pongs(), []);
  // The stale bound is 30 s: after 10 s of silence the next ping is answered, then not again
  // until another 10 s have passed.
  await time.tick(10_000);
  socket.deliver({ type: "ping", t: 2 });
  socket.deliver({ type: "ping", t: 3 });
  await time.tick(1);
  assert.deepEqual(pongs(), [2]);
  await time.tick(10_000);
  socket.deliver({ type: "ping", t: 4 });
  await time.tick(1);
  assert.deepEqual(pongs(), [2, 4]);
  await conn.drop("test end");
});

Deno.test("fleet connection: status frames update the record; draining is one-way; close removes it", async () => {
  using time = new FakeTime();
  const { socket, conn, directory } = await connection();
  socket.deliver(registerFrame("w-4", "http://127.0.0.1:9004", { models: [] }));
  await time.tick(1);
  socket.deliver({ ...statusFrame(1, ["fixture/dense", "fixture/sparse"]), queue_depth: 3 });
  await time.tick(1);
  let [record] = directory.snapshot();
  assert.deepEqual(record.models.map((m) => m.name).sort(), ["fixture/dense", "fixture/sparse"]);
  assert.equal(record.queue_depth, 3);
  socket.deliver({ type: "drain", reason: "shutdown" });
  await time.tick(1);
  assert.ok(socket.sent.some((m) => m.type === "ack" && m.of === "drain"));
  socket.deliver({ ...statusFrame(2, ["fixture/dense"]), draining: false });
  await time.tick(1);
  [record] = directory.snapshot();
  assert.equal(record.draining, true, "a status frame cannot undo a drain notice");
  // The worker goes away: its record goes with the connection.
  socket.readyState = 3;
  socket.onclose?.({ code: 1001 });
  await time.tick(1);
  assert.ok(conn.closed);
  assert.deepEqual(directory.snapshot(), []);
});
