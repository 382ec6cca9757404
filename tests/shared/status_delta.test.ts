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
  const d = new StatusDeltas(10, () => 0.99);
  assert.deepEqual(d.next(full(0, [a(0), b])).models, [a(0), b]);
  assert.deepEqual(d.next(full(1, [a(0), b])).models, []);
  assert.deepEqual(d.next(full(2, [a(3), b])).models, [a(3)]);
  assert.deepEqual(d.next(full(3, [a(3), b])).models, []);
  // The rest of the frame is the full one's.
  const f = d.next({ ...full(4, [a(3), b]), queue_depth: 7 });
  assert.equal(f.seq, 4);
  assert.equal(f.queue_depth, 7);
});

Deno.test("status deltas: every fullEvery-th frame, from a random phase, and after a reset, lists all", () => {
  // The phase after the first full frame is random (0.5 of 4: the 2nd frame after it), then 4.
  const d = new StatusDeltas(4, () => 0.5);
  const sizes = () => d.next(full(0, [a(0), b])).models.length;
  assert.deepEqual(Array.from({ length: 11 }, sizes), [2, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0]);
  d.reset();
  assert.equal(sizes(), 2, "a new socket starts full");
  // Workers that start together spread their full frames over the period.
  const phases = [0, 0.3, 0.6, 0.9].map((r) => {
    const w = new StatusDeltas(10, () => r);
    const lens = Array.from({ length: 12 }, () => w.next(full(0, [a(0), b])).models.length);
    return lens.indexOf(2, 1);
  });
  assert.deepEqual(phases, [1, 4, 7, 10]);
});

Deno.test("status deltas: a model that returns after leaving is listed again", () => {
  const d = new StatusDeltas(100, () => 0.99);
  d.next(full(0, [a(0), b]));
  assert.deepEqual(d.next(full(1, [a(0)])).models, []);
  assert.deepEqual(d.next(full(2, [a(0), b])).models, [b]);
});
