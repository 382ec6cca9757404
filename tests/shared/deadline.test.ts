import assert from "node:assert/strict";
import { deadline } from "@svc/shared/deadline";
import { FakeTime } from "../helpers/fake_time.ts";

const never = new Promise<never>(() => {});

Deno.test("deadline: work that settles first wins, and its timer is cleared", async () => {
  using time = new FakeTime();
  assert.equal(await deadline(Promise.resolve(7), 60_000), 7);
  assert.equal(await deadline(Promise.resolve("done"), 60_000, () => "late"), "done");
  await assert.rejects(deadline(Promise.reject(new Error("boom")), 60_000), /boom/);
  assert.equal(time.pendingTimers, 0);
});

Deno.test("deadline: a wait that runs out settles with onTimeout (undefined without it)", async () => {
  assert.equal(await deadline(never, 0), undefined);
  assert.equal(await deadline(never, 0, () => false), false);
  await assert.rejects(
    deadline(never, 0, () => {
      throw new Error("still loading");
    }),
    /still loading/,
  );
});

Deno.test("deadline: work that fails after the wait ran out is ignored, not unhandled", async () => {
  let fail!: (e: Error) => void;
  const late = new Promise<never>((_, reject) => fail = reject);
  assert.equal(await deadline(late, 0, () => "timed out"), "timed out");
  fail(new Error("late failure"));
  // An unhandled rejection would fail this test once the microtasks have run.
  await new Promise((r) => setTimeout(r, 0));
});
