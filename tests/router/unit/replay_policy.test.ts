/**
 * The replay policy (router/proxy/replay.ts) when one worker death drops several identical
 * requests at once, as a worker's connection carries many: each is a bystander of the same death,
 * replayed once; the same body dropped by a second death is not replayed again.
 */
import assert from "node:assert/strict";
import { ReplayPolicy } from "#router/proxy/replay.ts";

const body = { chunks: [new TextEncoder().encode('{"items":[{"text":"hello"}]}')], length: 28 };

Deno.test("replay: identical requests dropped by one death are each replayed once", () => {
  const p = new ReplayPolicy({
    maxBodyBytes: 32_768,
    budgetPercent: 100,
    budgetMin: 10,
    rememberBodies: 100,
  });
  for (let i = 0; i < 4; i++) p.sent();
  for (let i = 0; i < 4; i++) assert.equal(p.dropped(body, "conn-1"), true, `request ${i}`);
  // The replays land on another worker, which dies of one of them: not replayed again.
  assert.equal(p.dropped(body, "conn-2"), false);
  // Without a connection to tell deaths apart, every drop counts as a death of its own.
  const q = new ReplayPolicy({
    maxBodyBytes: 32_768,
    budgetPercent: 100,
    budgetMin: 10,
    rememberBodies: 100,
  });
  assert.equal(q.dropped(body), true);
  assert.equal(q.dropped(body), false);
});
