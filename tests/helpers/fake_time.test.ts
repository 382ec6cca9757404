/** The fake clock runs timers in due order, only when told, and puts the real clock back. */
import assert from "node:assert/strict";
import { FakeTime } from "./fake_time.ts";

Deno.test("fake time: timers fire in due order only when the clock moves", async () => {
  const realSetTimeout = setTimeout;
  const realNow = Date.now;
  {
    using time = new FakeTime(1_000);
    const seen: string[] = [];
    setTimeout(() => seen.push("b@20"), 20);
    setTimeout(() => seen.push("a@10"), 10);
    const cancelled = setTimeout(() => seen.push("never"), 5);
    clearTimeout(cancelled);
    const every = setInterval(() => seen.push(`i@${Date.now() - 1_000}`), 15);
    assert.equal(performance.now(), 0);
    await time.tick(9);
    assert.deepEqual(seen, []);
    await time.tick(21); // now 30
    assert.deepEqual(seen, ["a@10", "i@15", "b@20", "i@30"]);
    assert.equal(Date.now(), 1_030);
    assert.equal(performance.now(), 30);
    clearInterval(every);
    await time.tick(100);
    assert.equal(seen.length, 4);
    assert.equal(time.pendingTimers, 0);
  }
  assert.equal(setTimeout, realSetTimeout);
  assert.equal(Date.now, realNow);
  assert.ok(Math.abs(Date.now() - new Date().getTime()) < 1000, "real Date.now is back");
});

Deno.test("fake time: promise callbacks run between timers, as they would live", async () => {
  using time = new FakeTime();
  const seen: string[] = [];
  setTimeout(async () => {
    await Promise.resolve();
    seen.push("after await");
    setTimeout(() => seen.push("chained"), 5); // scheduled from inside a timer: same tick
  }, 10);
  await time.tick(15);
  assert.deepEqual(seen, ["after await", "chained"]);
  assert.throws(() => new FakeTime(), /already installed/);
});
