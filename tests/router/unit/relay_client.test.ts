/**
 * The relay's asking end alone (router/fleet/relay/client.ts), against a hand-driven holder on an
 * in-memory KV: a request nobody claims is withdrawn within the pickup bound; one claimed by a
 * holder that then goes away ends as `dropped` (502 WORKER_LOST upstream) within two more
 * bounds, not the upstream timeout; the client going away ends the wait at once.
 */
import assert from "node:assert/strict";
import { silentLogger } from "@svc/shared/log";
import { RelayClient } from "#router/fleet/relay/client.ts";
import { RelayKeys } from "#router/fleet/relay/keys.ts";
import type { UpstreamRequest } from "#router/proxy/upstream.ts";

const PICKUP_MS = 150;

async function withClient(fn: (client: RelayClient, kv: Deno.Kv) => Promise<void>) {
  const kv = await Deno.openKv(":memory:");
  try {
    await fn(
      new RelayClient({
        kv,
        prefix: "svc",
        routerId: "asker",
        maxBodyBytes: 1 << 20,
        pollMs: 20,
        pickupMs: PICKUP_MS,
        timeoutMs: 60_000,
        log: silentLogger,
      }),
      kv,
    );
  } finally {
    kv.close();
  }
}

function request(signal = new AbortController().signal): UpstreamRequest {
  const body = new TextEncoder().encode('{"items":[{"text":"x"}]}');
  return {
    base: "",
    method: "POST",
    path: "/v1/encode/m",
    headers: { "content-type": "application/json", authorization: "Bearer client-secret" },
    body: { chunks: [body], length: body.length },
    signal,
  };
}

/** Every relay key but the bells. */
async function keys(kv: Deno.Kv): Promise<Deno.KvKey[]> {
  const out: Deno.KvKey[] = [];
  for await (const e of kv.list({ prefix: ["svc", "relay"] })) {
    if (e.key[2] !== "bell") out.push(e.key);
  }
  return out;
}

Deno.test("relay client: nobody picks up: withdrawn within the bound, no keys left", async () => {
  await withClient(async (client, kv) => {
    const t0 = Date.now();
    const out = await client.send("holder", "w1", request());
    assert.equal(out.kind, "not_picked_up");
    // Well short of the 60 s upstream timeout: the pickup bound ended it.
    assert.ok(Date.now() - t0 < PICKUP_MS + 10_000);
    assert.deepEqual(await keys(kv), []);
  });
});

Deno.test("relay client: the stored request carries no client credential", async () => {
  await withClient(async (client, kv) => {
    const sent = client.send("holder", "w1", request());
    const inbox = new RelayKeys("svc").inbox("holder");
    let head: unknown;
    while (head === undefined) {
      for await (const e of kv.list({ prefix: inbox })) head = e.value;
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.doesNotMatch(JSON.stringify(head), /client-secret|authorization/);
    assert.equal((await sent).kind, "not_picked_up");
  });
});

Deno.test("relay client: a holder gone after its claim ends as dropped, not a hang", async () => {
  await withClient(async (client, kv) => {
    const inbox = new RelayKeys("svc").inbox("holder");
    // The holder claims the request (deletes its head), then dies without answering.
    const claim = (async () => {
      for (;;) {
        for await (const e of kv.list({ prefix: inbox })) {
          if ((await kv.atomic().check(e).delete(e.key).commit()).ok) return;
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const t0 = Date.now();
    const out = await client.send("holder", "w1", request(), () => false);
    await claim;
    assert.equal(out.kind, "dropped");
    const ms = Date.now() - t0;
    assert.ok(ms >= 2 * PICKUP_MS && ms < 4 * PICKUP_MS + 10_000, `${ms} ms`);
  });
});

Deno.test("relay client: the client going away ends the wait at once", async () => {
  await withClient(async (client, kv) => {
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 30);
    const out = await client.send("holder", "w1", request(ctl.signal));
    assert.equal(out.kind, "aborted");
    assert.deepEqual(await keys(kv), [], "the unclaimed request is withdrawn");
  });
});

Deno.test("relay client: a head the holder would refuse is a 400 here, nothing written", async () => {
  await withClient(async (client, kv) => {
    const long = { ...request(), headers: { "x-trace-id": "t".repeat(9000) } };
    await assert.rejects(
      () => client.send("holder", "w1", long),
      (err: Error & { code?: string }) => err.code === "INVALID_INPUT",
    );
    const offApi = { ...request(), path: "/metrics" };
    await assert.rejects(() => client.send("holder", "w1", offApi));
    assert.deepEqual(await keys(kv), []);
  });
});

/** Long, so that renewals late on a busy machine never let the key lapse in this test. */
const BUSY_TTL_MS = 30_000;

Deno.test("relay client: a slow holder that keeps its busy key is waited for", async () => {
  await withClient(async (client, kv) => {
    const k = new RelayKeys("svc");
    // The holder claims the request and keeps it busy for five pickup bounds, then answers;
    // meanwhile the asker's directory view says the worker is held by nobody.
    const holder = (async () => {
      for (;;) {
        for await (const e of kv.list({ prefix: k.inbox("holder") })) {
          const id = String(e.key.at(-1));
          const busy = k.busy(id);
          const claimed = await kv.atomic().check(e).delete(e.key)
            .set(busy, "holder", { expireIn: BUSY_TTL_MS }).commit();
          if (!claimed.ok) continue;
          for (let i = 0; i < 5; i++) {
            await new Promise((r) => setTimeout(r, PICKUP_MS));
            await kv.set(busy, "holder", { expireIn: BUSY_TTL_MS });
          }
          const head = { kind: "answer", status: 200, headers: [], body_bytes: 0, body_chunks: 0 };
          await kv.set(k.answer(id), head, { expireIn: 60_000 });
          return;
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const out = await client.send("holder", "w1", request(), () => false);
    await holder;
    assert.equal(out.kind, "answer");
  });
});
