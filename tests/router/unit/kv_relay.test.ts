/**
 * The relay between router instances through KV (issue 34), in one process on one in-memory KV
 * (watches see every write here): a connection-only worker dials router A alone, as on Deno
 * Deploy where it reaches one isolate, and router B serves it through A with the same status,
 * headers and bytes; a body over SVC_RELAY_MAX_BODY_BYTES gets a 503 naming it; a worker that
 * dies mid-relay gives 502 WORKER_LOST; a holder that never picks a request up costs the
 * reconnect hold and a 503, never a hang, and leaves nothing in KV.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, startTestRouter, TEST_TOKEN, type TestRouter } from "../helpers/router.ts";
import { byteSum, startSocketWorker } from "../helpers/socket_worker.ts";
import { openRogue, registerFrame } from "../helpers/rogue_worker.ts";
import { decodeFrame, messageBytes } from "@svc/shared/fleet/streams/frames";
import { RelayKeys } from "#router/fleet/relay/keys.ts";

const PATH = "/v1/encode/fixture%2Fdense";
const CPU = { "x-svc-machine-profile": "cpu", "content-type": "application/json" };
const ENV = { SVC_DIRECTORY: "kv", SVC_MACHINE_PROFILES: "cpu", SVC_RESULT_CACHE_BYTES: "0" };

/** Routers A and B on one KV database (`envB` for B only); `fn` runs with both. */
async function twoRouters(
  fn: (a: TestRouter, b: TestRouter, kv: Deno.Kv) => Promise<void>,
  envA: Record<string, string> = {},
  envB: Record<string, string> = {},
): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  const a = await startTestRouter({ ...ENV, ...envA }, { kv });
  const b = await startTestRouter({ ...ENV, ...envB }, { kv });
  try {
    await fn(a, b, kv);
  } finally {
    await b.close();
    await a.close();
    kv.close();
  }
}

/** Connection-only worker `id` dialling router `url` alone. */
function connWorker(url: string, id: string) {
  return startSocketWorker({
    routerUrl: url,
    token: TEST_TOKEN,
    id,
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "loaded" }],
    transport: "connection",
  });
}

async function sees(r: TestRouter, n: number): Promise<void> {
  await waitFor(async () => (await getJson(`${r.url}/health`)).body.worker_count === n, "seen");
}

/** Keys left under the relay's prefix. */
async function relayKeys(kv: Deno.Kv): Promise<Deno.KvKey[]> {
  const out: Deno.KvKey[] = [];
  for await (const e of kv.list({ prefix: ["svc", "relay"] })) {
    if (e.key[2] !== "bell") out.push(e.key);
  }
  return out;
}

async function post(url: string, body: Uint8Array<ArrayBuffer> | string) {
  const res = await fetch(`${url}${PATH}`, { method: "POST", headers: CPU, body });
  return {
    status: res.status,
    headers: res.headers,
    bytes: new Uint8Array(await res.arrayBuffer()),
  };
}

Deno.test("relay: a worker connected to A alone answers through B with the same bytes", async () => {
  await twoRouters(async (a, b, kv) => {
    const w = await connWorker(a.url, "relay-w");
    try {
      await sees(b, 1);
      const body = new TextEncoder().encode(JSON.stringify({ items: [{ text: "x".repeat(2e6) }] }));
      const direct = await post(a.url, body);
      const relayed = await post(b.url, body);
      assert.equal(relayed.status, 200);
      assert.equal(relayed.status, direct.status);
      assert.deepEqual(relayed.bytes, direct.bytes);
      assert.equal(relayed.headers.get("content-type"), direct.headers.get("content-type"));
      const seen = JSON.parse(new TextDecoder().decode(relayed.bytes));
      assert.deepEqual(seen, { worker: "relay-w", bytes: body.length, sum: byteSum(body) });
      // Small and many: every answer is the worker's.
      const small = await Promise.all(
        [0, 1, 2, 3].map((i) => post(b.url, JSON.stringify({ items: [{ text: `t${i}` }] }))),
      );
      assert.deepEqual(small.map((s) => s.status), [200, 200, 200, 200]);
      // Counted on both sides: B asked five times, A served five.
      const metric = async (r: TestRouter, side: string, outcome: string) => {
        const text = await (await fetch(`${r.url}/metrics`)).text();
        const line = `svc_router_relay_requests_total{side="${side}",outcome="${outcome}"} `;
        const at = text.indexOf(line);
        return at < 0 ? 0 : Number(text.slice(at + line.length).split("\n")[0]);
      };
      assert.equal(await metric(b, "asked", "ok"), 5);
      assert.equal(await metric(a, "served", "answer"), 5);
      assert.equal(await metric(a, "asked", "ok"), 0);
      await waitFor(async () => (await relayKeys(kv)).length === 0, "relay keys cleaned up");
    } finally {
      await w.close();
    }
  });
});

/** A deadline the cancellation test must not wait for. */
const LONG_DEADLINE = { SVC_UPSTREAM_TIMEOUT_MS: "60000" };

Deno.test("relay: a client that leaves cancels its request at the worker", async () => {
  await twoRouters(
    async (a, b) => {
      const w = await connWorker(a.url, "relay-cancel");
      w.behaviour = "hold";
      try {
        await sees(b, 1);
        const client = new AbortController();
        const asked = fetch(`${b.url}${PATH}`, {
          method: "POST",
          headers: CPU,
          body: JSON.stringify({ items: [{ text: "held" }] }),
          signal: client.signal,
        }).catch(() => undefined);
        await waitFor(() => w.seen.length === 1, "the relayed request to reach the worker");
        client.abort();
        await asked;
        // B marks it cancelled, A resets the worker's stream: the worker drops the work, long
        // before the request's deadline would have (SVC_UPSTREAM_TIMEOUT_MS below).
        await waitFor(() => w.cancelled === 1, "the worker's request to be cancelled", 10_000);
      } finally {
        w.releaseHeld();
        await w.close();
      }
    },
    LONG_DEADLINE,
    LONG_DEADLINE,
  );
});

Deno.test("relay: a body over SVC_RELAY_MAX_BODY_BYTES gets a 503 naming the setting", async () => {
  await twoRouters(
    async (a, b) => {
      const w = await connWorker(a.url, "relay-big");
      try {
        await sees(b, 1);
        const res = await getJson(`${b.url}${PATH}`, {
          method: "POST",
          headers: CPU,
          body: JSON.stringify({ items: [{ text: "y".repeat(4096) }] }),
        });
        assert.equal(res.status, 503);
        assert.equal(res.body.detail.code, "NO_CAPACITY");
        assert.match(res.body.detail.message, /SVC_RELAY_MAX_BODY_BYTES=1024/);
        assert.equal(w.seen.length, 0, "nothing reached the worker");
      } finally {
        await w.close();
      }
    },
    {},
    { SVC_RELAY_MAX_BODY_BYTES: "1024" },
  );
});

Deno.test("relay: a claimed request the holder cannot serve is answered at once", async () => {
  await twoRouters(async (a, _b, kv) => {
    const holder = (await getJson(`${a.url}/health`)).body.router_id as string;
    const keys = new RelayKeys("svc");
    // A head no asker of this version writes (a path off the API): claimed, then refused.
    const head = {
      asker: "elsewhere",
      worker_id: "w",
      method: "POST",
      path: "/metrics",
      headers: {},
      body_bytes: 0,
      body_chunks: 0,
      deadline: Date.now() + 60_000,
    };
    await kv.atomic().set(keys.request(holder, "bad-1"), head).set(keys.bell(holder), "x")
      .commit();
    const answer = await waitFor(
      async () => (await kv.get(keys.answer("bad-1"))).versionstamp !== null,
      "the holder's answer",
      5_000,
    );
    assert.ok(answer >= 0);
    const got = (await kv.get<{ kind: string }>(keys.answer("bad-1"))).value;
    assert.equal(got?.kind, "not_delivered");
    assert.equal((await kv.get(keys.request(holder, "bad-1"))).versionstamp, null, "claimed");
  });
});

Deno.test("relay: a worker that dies mid-relay gives 502 WORKER_LOST", async () => {
  await twoRouters(
    async (a, b) => {
      const rogue = await openRogue(a.url);
      rogue.ws.binaryType = "arraybuffer";
      rogue.ws.addEventListener("message", (e) => {
        if (typeof e.data === "string") return;
        // The whole request arrived (a HEAD frame with END): the worker dies of it.
        const d = decodeFrame(messageBytes(e.data)!, 1 << 20);
        if (d.ok && d.frame.type === 1) rogue.ws.close();
      });
      const { url: _url, ...frame } = registerFrame("relay-dies", "http://127.0.0.1:9");
      rogue.send({
        ...frame,
        transport: "connection",
        streams: { window: 1 << 20, connection_window: 16 << 20 },
      });
      try {
        await sees(b, 1);
        const res = await getJson(`${b.url}${PATH}`, {
          method: "POST",
          headers: CPU,
          body: JSON.stringify({ items: [{ text: "poison" }] }),
        });
        assert.equal(res.status, 502, JSON.stringify(res.body));
        assert.equal(res.body.detail.code, "WORKER_LOST");
        assert.equal(res.headers.get("x-should-retry"), "false");
      } finally {
        rogue.close();
      }
    },
    {},
    { SVC_REPLAY_MAX_BODY_BYTES: "0" },
  );
});

Deno.test("relay: a holder that never picks up costs the hold, then 503; nothing left", async () => {
  // A holds the worker but runs no relay inbox: B's requests are never picked up.
  await twoRouters(
    async (a, b, kv) => {
      const w = await connWorker(a.url, "relay-deaf");
      try {
        await sees(b, 1);
        const t0 = Date.now();
        const res = await getJson(`${b.url}${PATH}`, {
          method: "POST",
          headers: CPU,
          body: JSON.stringify({ items: [{ text: "lost" }] }),
        });
        const ms = Date.now() - t0;
        assert.equal(res.status, 503);
        assert.equal(res.body.detail.code, "NO_CAPACITY");
        assert.ok(ms >= 600 && ms < 10_000, `${ms} ms`);
        assert.equal(w.seen.length, 0);
        assert.deepEqual(await relayKeys(kv), [], "withdrawn requests leave no keys");
      } finally {
        await w.close();
      }
    },
    { SVC_RELAY_MAX_BODY_BYTES: "0" },
    {
      SVC_RELAY_PICKUP_MS: "200",
      SVC_RECONNECT_HOLD_MS: "600",
    },
  );
});

Deno.test("relay: a body over the holder's body budget is left unclaimed, then 503", async () => {
  // A's budget holds 2 KiB of bodies: B's 4 KiB request is never claimed, and never served.
  await twoRouters(
    async (a, b, kv) => {
      const w = await connWorker(a.url, "relay-budget");
      try {
        await sees(b, 1);
        const res = await getJson(`${b.url}${PATH}`, {
          method: "POST",
          headers: CPU,
          body: JSON.stringify({ items: [{ text: "z".repeat(4096) }] }),
        });
        assert.equal(res.status, 503);
        assert.equal(w.seen.length, 0, "nothing reached the worker");
        assert.deepEqual(await relayKeys(kv), [], "withdrawn requests leave no keys");
        // A small one still goes through A's budget.
        const small = await post(b.url, JSON.stringify({ items: [{ text: "fits" }] }));
        assert.equal(small.status, 200);
      } finally {
        await w.close();
      }
    },
    { SVC_MAX_BODY_BYTES: "2048", SVC_MAX_INFLIGHT_BODY_BYTES: "2048" },
    { SVC_RELAY_PICKUP_MS: "200", SVC_RECONNECT_HOLD_MS: "600" },
  );
});
