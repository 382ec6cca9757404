/**
 * The connection transport at the router (issue 33): requests to a worker over the socket it
 * dialled. A worker that breaks the stream protocol (answers a stream never opened, sends past its
 * credit) is closed with 4400 and only its own request fails (502); a worker that drops its socket
 * while a request's answer is due gives 502 WORKER_LOST, never a second worker; a client that goes
 * away resets its stream. Fake workers: the socket worker over its real fleet link, and a
 * hand-driven rogue socket.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, startTestRouter, TEST_TOKEN } from "../helpers/router.ts";
import { startSocketWorker } from "../helpers/socket_worker.ts";
import { openRogue, registerFrame } from "../helpers/rogue_worker.ts";
import { dataFrame, decodeFrame, headFrame, messageBytes } from "@svc/shared/fleet/streams/frames";

const PATH = "/v1/encode/fixture%2Fdense";
const CPU = { "x-svc-machine-profile": "cpu", "content-type": "application/json" };
const OFFER = { window: 1024 * 1024, connection_window: 16 * 1024 * 1024 };

/** A rogue that registers for the connection transport and answers requests as `answer` says. */
async function rogueWorker(
  url: string,
  id: string,
  answer: (ws: WebSocket, streamId: number) => void,
) {
  const rogue = await openRogue(url);
  rogue.ws.binaryType = "arraybuffer";
  rogue.ws.addEventListener("message", (e) => {
    if (typeof e.data === "string") return;
    const d = decodeFrame(messageBytes(e.data)!, 1 << 20);
    if (d.ok && d.frame.type === 1) answer(rogue.ws, d.frame.id);
  });
  const { url: _url, ...frame } = registerFrame(id, "http://127.0.0.1:9");
  rogue.send({ ...frame, transport: "connection", streams: OFFER });
  await waitFor(() => rogue.frames.some((f) => f.type === "registered"), "registered");
  const registered = rogue.frames.find((f) => f.type === "registered");
  assert.ok(registered?.type === "registered" && registered.streams, "streams granted");
  return rogue;
}

Deno.test("connection: a worker without any URL serves over its socket; /health shows it", async () => {
  const r = await startTestRouter();
  const w = await startSocketWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "conn",
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "loaded" }],
    transport: "connection",
  });
  try {
    await waitFor(() => w.link.connected, "registered");
    const body = JSON.stringify({ items: [{ text: "x".repeat(300_000) }] });
    const res = await getJson(`${r.url}${PATH}`, { method: "POST", headers: CPU, body });
    assert.equal(res.status, 200);
    assert.equal(res.body.bytes, body.length);
    const health = await getJson(`${r.url}/health`);
    const rec = health.body.workers.find((x: { id: string }) => x.id === "conn");
    assert.equal(rec.transport, "connection");
    assert.equal(rec.url, "");
  } finally {
    await w.close();
    await r.close();
  }
});

for (
  const [name, misbehave] of [
    ["answers a stream never opened", (ws: WebSocket, id: number) => {
      ws.send(headFrame(id + 1000, { status: 200, headers: {} }, new Uint8Array(), true));
    }],
    // A small answer is read whole before it goes on: the client gets the 502, not a cut answer.
    ["sends past its credit", (ws: WebSocket, id: number) => {
      ws.send(
        headFrame(
          id,
          { status: 200, headers: { "content-length": "1000" } },
          new Uint8Array(),
          false,
        ),
      );
      for (let i = 0; i < 6; i++) ws.send(dataFrame(id, new Uint8Array(64 * 1024), false));
    }],
    ["sends an answer head that is not one", (ws: WebSocket, id: number) => {
      ws.send(headFrame(id, { status: "ok" }, new Uint8Array(), true));
    }],
  ] as const
) {
  Deno.test(`connection: a worker that ${name} is closed; only its request fails`, async () => {
    // No replay of small dropped requests (router/proxy/replay.ts): what the worker's own
    // request gets is the transport's doing alone.
    const r = await startTestRouter({
      SVC_WORKER_STREAM_WINDOW_BYTES: String(256 * 1024),
      SVC_REPLAY_MAX_BODY_BYTES: "0",
    });
    const good = await startSocketWorker({
      routerUrl: r.url,
      token: TEST_TOKEN,
      id: "good",
      profile: "cpu",
      models: [{ name: "fixture/dense", state: "available" }],
      transport: "connection",
    });
    let rogue;
    try {
      // The rogue has the model loaded: it is chosen first.
      rogue = await rogueWorker(r.url, "rogue", misbehave);
      await waitFor(() => good.link.connected, "good registered");
      const res = await getJson(`${r.url}${PATH}`, {
        method: "POST",
        headers: CPU,
        body: '{"items":[{"text":"hi"}]}',
      });
      assert.equal(res.status, 502, JSON.stringify(res.body));
      const closed = await rogue.closed;
      assert.equal(closed.code, 4400);
      // The other worker serves on.
      const next = await getJson(`${r.url}${PATH}`, {
        method: "POST",
        headers: CPU,
        body: '{"items":[{"text":"next"}]}',
      });
      assert.equal(next.status, 200);
      assert.equal(next.body.worker, "good");
    } finally {
      rogue?.close();
      await good.close();
      await r.close();
    }
  });
}

/**
 * A router with a healthy connection worker ("other") and a rogue one ("dies") that takes a
 * request and then drops its socket; `fn` sends through the router.
 */
async function withDyingWorker(
  fn: (
    routerUrl: string,
    other: Awaited<ReturnType<typeof startSocketWorker>>,
  ) => Promise<void>,
): Promise<void> {
  const r = await startTestRouter();
  const other = await startSocketWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "other",
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "available" }],
    transport: "connection",
  });
  let rogue;
  try {
    rogue = await rogueWorker(r.url, "dies", (ws) => ws.close());
    await waitFor(() => other.link.connected, "other registered");
    await fn(r.url, other);
  } finally {
    rogue?.close();
    await other.close();
    await r.close();
  }
}

Deno.test("connection: a socket lost while the answer is due: 502 WORKER_LOST, nobody else", async () => {
  // A large request (past SVC_REPLAY_MAX_BODY_BYTES): never replayed elsewhere.
  await withDyingWorker(async (url, other) => {
    const res = await getJson(`${url}${PATH}`, {
      method: "POST",
      headers: CPU,
      body: JSON.stringify({ items: [{ text: "poison ".repeat(10_000) }] }),
    });
    assert.equal(res.status, 502);
    assert.equal(res.body.detail.code, "WORKER_LOST");
    assert.equal(other.seen.length, 0, "never replayed on another worker");
  });
});

Deno.test("connection: a small request lost with its worker's socket is replayed once, as over HTTP", async () => {
  await withDyingWorker(async (url, other) => {
    const res = await getJson(`${url}${PATH}`, {
      method: "POST",
      headers: CPU,
      body: '{"items":[{"text":"a bystander"}]}',
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.worker, "other");
    assert.equal(other.seen.length, 1);
  });
});

Deno.test("connection: two routers on one KV: the holder serves over the socket, the other through it", async () => {
  const kv = await Deno.openKv(":memory:");
  const env = {
    SVC_DIRECTORY: "kv",
    SVC_KV_REFRESH_MS: "100",
    SVC_WORKER_STALE_MS: "600000",
    SVC_RECONNECT_HOLD_MS: "200",
  };
  const a = await startTestRouter(env, { kv });
  const b = await startTestRouter(env, { kv });
  const w = await startSocketWorker({
    routerUrl: a.url,
    token: TEST_TOKEN,
    id: "kv-conn",
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "loaded" }],
    transport: "connection",
  });
  try {
    await waitFor(() => w.link.connected, "registered on a");
    for (const r of [a, b]) {
      await waitFor(async () => {
        const h = await getJson(`${r.url}/health`);
        return h.body.workers?.some((x: { id: string; transport: string }) =>
          x.id === "kv-conn" && x.transport === "connection"
        );
      }, "the worker listed with its transport");
    }
    const res = await getJson(`${a.url}${PATH}`, {
      method: "POST",
      headers: CPU,
      body: '{"items":[{"text":"over the socket"}]}',
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.worker, "kv-conn");
    // B holds no socket and the worker has no URL: B relays the request through KV to A
    // (router/fleet/relay/; without the relay, kv_multi_link.test.ts: a hold, then a 503).
    const other = await getJson(`${b.url}${PATH}`, {
      method: "POST",
      headers: CPU,
      body: '{"items":[{"text":"from the other router"}]}',
    });
    assert.equal(other.status, 200, JSON.stringify(other.body));
    assert.equal(other.body.worker, "kv-conn");
  } finally {
    await w.close();
    await a.close();
    await b.close();
    kv.close();
  }
});
