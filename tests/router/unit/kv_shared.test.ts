/**
 * The KV-shared pieces on their own: the result cache's second tier (chunked bodies, the size
 * bound, the time to live) and the demand counts (totals across instances, cleared everywhere
 * once a pool is served, windowed).
 */
import assert from "node:assert/strict";
import { silentLogger } from "@svc/shared/log";
import { KvResultTier } from "#router/cache/kv_tier.ts";
import type { StoredAnswer } from "#router/cache/store.ts";
import { KvDemand } from "#router/kv/demand.ts";
import { waitFor } from "../../helpers/wait.ts";
import { createRouterMetrics } from "#router/metrics/router_metrics.ts";
import { DemandTracker } from "#router/provisioning.ts";

const REV = "0123456789abcdef";

function answer(size: number): StoredAnswer {
  const body = new Uint8Array(size);
  for (let i = 0; i < size; i++) body[i] = (i * 7) & 255;
  return {
    status: 200,
    headers: [["content-type", "application/json"]],
    body,
    revision: REV,
    producer: "conn-1",
  };
}

Deno.test("kv tier: bodies over one KV value come back whole; big ones stay local; TTL", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = { t: 1_000_000 };
  const opts = { kv, prefix: "t", maxEntryBytes: 200_000, ttlMs: 60_000, log: silentLogger };
  const a = new KvResultTier({ ...opts, now: () => clock.t });
  const b = new KvResultTier({ ...opts, now: () => clock.t });
  try {
    const big = answer(150_000); // three values
    a.set("k1", big);
    a.set("k2", answer(200_001)); // over the tier's bound
    await a.flush();
    const got = await b.get("k1");
    assert.ok(got);
    assert.deepEqual(got.body, big.body);
    assert.deepEqual(got.headers, big.headers);
    assert.equal(got.revision, REV);
    assert.equal(await b.get("k2"), undefined, "over the bound: not shared");
    assert.equal(await b.get("nothing"), undefined);
    // A newer answer under the same key replaces the old one whole.
    a.set("k1", answer(10));
    await a.flush();
    const newer = await b.get("k1");
    assert.equal(newer?.body.length, 10);
    assert.equal(newer?.storedAt, clock.t, "its age travels with it");
    // The replaced generation's chunks went with it: only the head and one chunk remain.
    const keys = [];
    for await (const e of kv.list({ prefix: ["t", "cache", "k1"] })) keys.push(e.key);
    assert.equal(keys.length, 2, JSON.stringify(keys));
    clock.t += 60_000;
    assert.equal(await b.get("k1"), undefined, "past the time to live");
  } finally {
    kv.close();
  }
});

Deno.test("kv demand: instances see each other's counts; a served pool clears them all", async () => {
  const kv = await Deno.openKv(":memory:");
  const opts = { kv, prefix: "d", windowS: 600, pollMs: 50, log: silentLogger };
  const a = new KvDemand(opts);
  const b = new KvDemand(opts);
  try {
    const now = Date.now();
    a.add("gpu", "default", now);
    a.add("gpu", "default", now);
    assert.equal(a.entry("gpu", "default", now)?.pending, 2, "counted before it is sent");
    b.add("gpu", "default", now);
    await waitFor(async () => {
      await a.refresh();
      await b.refresh();
      return a.entry("gpu", "default", Date.now())?.pending === 3 &&
        b.entry("gpu", "default", Date.now())?.pending === 3;
    }, "both see the total");
    assert.equal(b.entries(Date.now()).length, 1);
    // Past the window nobody counts it.
    assert.equal(a.entry("gpu", "default", now + 601_000), undefined);
    b.clear("gpu", "default");
    await waitFor(async () => {
      await a.refresh();
      return a.entry("gpu", "default", Date.now()) === undefined;
    }, "cleared everywhere");
  } finally {
    await a.close();
    await b.close();
    kv.close();
  }
});

Deno.test("kv demand: the webhook hears one notice per pool and interval from the fleet", async () => {
  const kv = await Deno.openKv(":memory:");
  const posts: { pending: number; router_id: string }[] = [];
  const fakeFetch = ((_url: string, init?: RequestInit) => {
    posts.push(JSON.parse(String(init?.body)));
    return Promise.resolve(new Response(null, { status: 204 }));
  }) as typeof fetch;
  const tracker = (routerId: string) =>
    new DemandTracker({
      windowS: 600,
      webhook: { url: "http://hook.invalid/", token: undefined, intervalS: 30 },
      routerId,
      log: silentLogger,
      metrics: createRouterMetrics(),
      fetch: fakeFetch,
      share: new KvDemand({ kv, prefix: "h", windowS: 600, pollMs: 50, log: silentLogger }),
    });
  const a = tracker("router-a");
  const b = tracker("router-b");
  try {
    a.record("gpu", "default", "org/m");
    await a.flush();
    b.record("gpu", "default", "org/m");
    b.record("gpu", "default", "org/m");
    await b.flush();
    assert.equal(posts.length, 1, JSON.stringify(posts));
    assert.equal(posts[0].router_id, "router-a");
  } finally {
    await a.close();
    await b.close();
    kv.close();
  }
});
