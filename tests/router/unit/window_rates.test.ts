/** Per-second rates over a sliding window (router/dashboard/rates.ts), sampled at any cadence. */
import assert from "node:assert/strict";
import { WindowRates } from "#router/dashboard/rates.ts";

Deno.test("window rates: a 200 ms tick reads a steady 5 requests/s as 5, not 0, 5, 0", () => {
  const rates = new WindowRates(2000);
  let count = 0;
  const seen: number[] = [];
  for (let t = 0; t <= 6000; t += 200) {
    if (t % 1000 === 0 && t > 0) count += 5; // five requests land each second
    seen.push(rates.sample(new Map([["w", count]]), t).get("w")!);
  }
  assert.equal(seen[0], 0, "nothing to compare on a first sample");
  for (const r of seen.slice(15)) assert.ok(r >= 4 && r <= 6, `${r} req/s`);
});

Deno.test("window rates: sampled on every call (thousands a second), the rate is still exact", () => {
  const rates = new WindowRates(2000);
  let last = 0;
  // 100 requests/s, sampled every 0.1 ms for 5 s.
  for (let t = 0; t <= 5000; t += 0.1) last = rates.sample(new Map([["w", t / 10]]), t).get("w")!;
  assert.ok(Math.abs(last - 100) < 1, `${last} req/s`);
});

Deno.test("window rates: keys missing from a sample are forgotten", () => {
  const rates = new WindowRates(2000);
  rates.sample(new Map([["a", 10], ["b", 10]]), 0);
  rates.sample(new Map([["a", 20]]), 1000);
  // b starts over: its first sample again.
  assert.equal(rates.sample(new Map([["a", 30], ["b", 40]]), 2000).get("b"), 0);
});
