/**
 * The result cache against a rogue worker: a fleet-token holder that announces the real model
 * revision and forges its answers. On an open router its entries live only while it stays
 * connected; on a router with SVC_WORKER_API_KEY (where it is `unverified-…`) they are never
 * stored. Either way 0 forged answers are in the cache, or served from it, once it has left. Also:
 * an operator's drain purges a worker's entries, a hit carries its own request's trace id, and
 * the followers of an abandoned flight coalesce again behind a new leader.
 */
import assert from "node:assert/strict";
import { type FakeWorker, startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { startTestRouter, TEST_TOKEN, type TestRouter } from "../helpers/router.ts";

const REV = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const SECRET = "fleet-worker-secret-unit-37-0123";
const CLIENT = "client-key-unit-37-000001";
const CPU = { "x-svc-machine-profile": "cpu" };
const MODEL = [{ name: "fixture/dense", state: "loaded" as const, revision: REV }];

/** A fake worker `id` registered with `r` (with the fleet secret when `env` gives it). */
async function worker(
  r: TestRouter,
  id: string,
  env: Record<string, string> = {},
): Promise<FakeWorker> {
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id,
    profile: "cpu",
    models: MODEL,
    env,
  });
  try {
    await waitFor(() => w.link.connected, `${id} registered`);
    const before = r.directory.snapshot().length;
    await waitFor(
      () => r.directory.snapshot().filter((x) => x.models[0]?.revision === REV).length >= before,
      `${id} announced`,
    );
  } catch (err) {
    await w.close();
    throw err;
  }
  return w;
}

interface Answered {
  status: number;
  cache: string | null;
  trace: string | null;
  /** The worker that computed the answer (the fake workers name themselves in the body). */
  by: string;
}

async function encode(
  r: TestRouter,
  text: string,
  headers: Record<string, string> = {},
): Promise<Answered> {
  const res = await fetch(`${r.url}/v1/encode/fixture%2Fdense`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...CPU, ...headers },
    body: JSON.stringify({ items: [{ text }] }),
  });
  const text_ = await res.text();
  let by = "";
  try {
    by = JSON.parse(text_).worker ?? "";
  } catch {
    // an error body
  }
  return {
    status: res.status,
    cache: res.headers.get("x-svc-cache"),
    trace: res.headers.get("x-trace-id"),
    by,
  };
}

/** Entries of the store whose producer is the connection `connId`. */
function entriesOf(r: TestRouter, connId: string): boolean {
  return [...r.cache!.store.producers()].includes(connId);
}

/**
 * The poisoning run: a rogue answers some queries while it is the only worker, an honest worker
 * joins, the rogue leaves; then nothing it forged is in the cache or served from it.
 */
async function poisoningRun(keyed: boolean): Promise<void> {
  const r = await startTestRouter(
    keyed ? { SVC_WORKER_API_KEY: SECRET, SVC_API_KEYS: CLIENT } : {},
  );
  const auth: Record<string, string> = keyed ? { authorization: `Bearer ${CLIENT}` } : {};
  let rogue: FakeWorker | undefined;
  let honest: FakeWorker | undefined;
  try {
    rogue = await worker(r, "w1"); // it claims the real worker's id; keyed, it gets none
    const rogueRecord = r.directory.snapshot()[0];
    assert.equal(rogueRecord.id.startsWith("unverified-"), keyed);
    const queries = Array.from({ length: 20 }, (_, i) => `query ${i}`);
    for (const q of queries.slice(0, 10)) {
      const a = await encode(r, q, auth);
      assert.equal(a.status, 200);
      assert.equal(a.by, "w1");
    }
    // Open: stored while the rogue is connected (docs/security.md says so). Keyed: never.
    assert.equal(entriesOf(r, rogueRecord.conn_id), !keyed);
    assert.equal((await encode(r, queries[0], auth)).cache, keyed ? "miss" : "hit");
    honest = await worker(r, "w-honest", keyed ? { SVC_WORKER_API_KEY: SECRET } : {});
    for (const q of queries.slice(10)) assert.equal((await encode(r, q, auth)).status, 200);
    await rogue.close();
    await waitFor(() => r.directory.snapshot().length === 1, "the rogue removed");
    // Purged without any request coming to do it (the sweep), then never served.
    await waitFor(() => !entriesOf(r, rogueRecord.conn_id), "the rogue's entries purged", {
      timeoutMs: 5000,
    });
    let forged = 0;
    for (const q of queries) {
      const a = await encode(r, q, auth);
      assert.equal(a.status, 200);
      if (a.by !== "w-honest") forged++;
    }
    assert.equal(forged, 0, "forged answers served after the rogue left");
    // The honest worker's answers are cached as ever.
    assert.equal((await encode(r, queries[0], auth)).cache, "hit");
  } finally {
    await rogue?.close();
    await honest?.close();
    await r.close();
  }
}

Deno.test("cache trust: a rogue's forged answers leave the cache with it (open router)", async () => {
  await poisoningRun(false);
});

Deno.test("cache trust: an unverified worker's answers are never stored (keyed router)", async () => {
  await poisoningRun(true);
});

Deno.test("cache trust: an operator's drain purges the worker's entries", async () => {
  const r = await startTestRouter();
  const w = await worker(r, "w1");
  try {
    await encode(r, "a");
    await encode(r, "b");
    assert.equal(r.cache!.store.size, 2);
    const res = await fetch(`${r.url}/v1/admin/workers/w1/drain`, { method: "POST" });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.equal(r.cache!.store.size, 0);
  } finally {
    await w.close();
    await r.close();
  }
});

Deno.test("cache trust: a hit carries its own request's trace id, never the first one's", async () => {
  const r = await startTestRouter();
  const w = await worker(r, "w1");
  try {
    const miss = await encode(r, "a", { "x-trace-id": "first-caller" });
    assert.equal(miss.cache, "miss");
    const mine = await encode(r, "a", { "x-trace-id": "second-caller" });
    assert.equal(mine.cache, "hit");
    assert.equal(mine.trace, "second-caller");
    const none = await encode(r, "a");
    assert.equal(none.cache, "hit");
    assert.ok(none.trace && none.trace !== "first-caller" && none.trace !== "t-1", none.trace!);
    const bad = await encode(r, "a", { "x-trace-id": "no spaces allowed" });
    assert.ok(bad.trace && /^[0-9a-f]{32}$/.test(bad.trace), bad.trace!);
  } finally {
    await w.close();
    await r.close();
  }
});

Deno.test("coalescing: the followers of an abandoned leader coalesce again behind a new one", async () => {
  const r = await startTestRouter();
  const w = await worker(r, "w1");
  try {
    let release!: () => void;
    w.hold = new Promise<void>((res) => release = res);
    const leaderClient = new AbortController();
    const leader = fetch(`${r.url}/v1/encode/fixture%2Fdense`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", ...CPU },
      body: JSON.stringify({ items: [{ text: "together" }] }),
      signal: leaderClient.signal,
    }).catch(() => undefined);
    await waitFor(() => w.requests.length === 1, "the leader at the worker");
    const followers = Array.from({ length: 4 }, () => encode(r, "together"));
    await waitFor(() => r.cache!.flights.followers === 4, "4 followers");
    leaderClient.abort();
    await leader;
    // One of them leads the next flight; the other three follow it.
    await waitFor(() => w.requests.length === 2, "a new leader at the worker");
    await waitFor(() => r.cache!.flights.followers === 3, "3 followers of the new leader");
    release();
    const answers = await Promise.all(followers);
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200]);
    assert.equal(w.requests.length, 2, "the work was done once more, not four times");
  } finally {
    await w.close();
    await r.close();
  }
});
