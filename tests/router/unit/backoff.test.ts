import assert from "node:assert/strict";
import { backoffDelay, RECONNECT_BASE_MS } from "#worker/fleet/backoff.ts";

Deno.test("backoff: grows exponentially, is capped, and jitters within [exp/2, exp]", () => {
  assert.equal(backoffDelay(0, 10_000, () => 0), RECONNECT_BASE_MS / 2);
  assert.equal(backoffDelay(0, 10_000, () => 1), RECONNECT_BASE_MS);
  assert.equal(backoffDelay(3, 10_000, () => 1), RECONNECT_BASE_MS * 8);
  assert.equal(backoffDelay(50, 10_000, () => 1), 10_000);
  assert.equal(backoffDelay(50, 10_000, () => 0), 5_000);
  const seen = new Set<number>();
  for (let i = 0; i < 50; i++) {
    const d = backoffDelay(4, 10_000);
    assert.ok(d >= 2000 && d <= 4000, String(d));
    seen.add(d);
  }
  assert.ok(seen.size > 5, "jitter spreads delays");
});
