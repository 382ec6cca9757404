/** A worker's status frames as deltas (shared/fleet/status_delta.ts). */
import assert from "node:assert/strict";
import type { FleetModelStatus, StatusMessage } from "@svc/shared/fleet/protocol";
import { StatusDeltas } from "@svc/shared/fleet/status_delta";

/** A full status frame of `models`. */
function full(seq: number, models: FleetModelStatus[]): StatusMessage {
  return {
    type: "status",
    seq,
    models,
    queue_depth: 0,
    in_flight: 0,
    memory_used_bytes: 0,
    memory_total_bytes: 0,
    draining: false,
  };
}

const a = (queue: number): FleetModelStatus => ({ name: "a", state: "loaded", queue_depth: queue });
const b: FleetModelStatus = { name: "b", state: "available", queue_depth: 0 };

Deno.test("status deltas: the first frame lists all, then only what changed", () => {
  const d = new StatusDeltas(10);
  assert.deepEqual(d.next(full(0, [a(0), b])).models, [a(0), b]);
  assert.deepEqual(d.next(full(1, [a(0), b])).models, []);
  assert.deepEqual(d.next(full(2, [a(3), b])).models, [a(3)]);
  assert.deepEqual(d.next(full(3, [a(3), b])).models, []);
  // The rest of the frame is the full one's.
  const f = d.next({ ...full(4, [a(3), b]), queue_depth: 7 });
  assert.equal(f.seq, 4);
  assert.equal(f.queue_depth, 7);
});

Deno.test("status deltas: every fullEvery-th frame, and after a reset, lists all", () => {
  const d = new StatusDeltas(3);
  d.next(full(0, [a(0), b]));
  assert.equal(d.next(full(1, [a(0), b])).models.length, 0);
  assert.equal(d.next(full(2, [a(0), b])).models.length, 0);
  assert.equal(d.next(full(3, [a(0), b])).models.length, 2, "the periodic full frame");
  assert.equal(d.next(full(4, [a(0), b])).models.length, 0);
  d.reset();
  assert.equal(d.next(full(5, [a(0), b])).models.length, 2, "a new socket starts full");
});

Deno.test("status deltas: a model that returns after leaving is listed again", () => {
  const d = new StatusDeltas(100);
  d.next(full(0, [a(0), b]));
  assert.deepEqual(d.next(full(1, [a(0)])).models, []);
  assert.deepEqual(d.next(full(2, [a(0), b])).models, [b]);
});
