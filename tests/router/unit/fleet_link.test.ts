/**
 * The fleet link end to end in one process: the real router (Hono app, hub, directory) and the
 * real worker link, with fake worker HTTP servers. Network and env permissions only.
 */
import assert from "node:assert/strict";
import {
  CLOSE_CODES,
  decodeRouterMessage,
  encodeMessage,
  FLEET_PATH,
  type RegisterMessage,
} from "@svc/shared/fleet/protocol";
import { startFleetLink } from "#worker/fleet/mod.ts";
import { loadWorkerSettings } from "@svc/worker/settings";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, startTestRouter, TEST_TOKEN } from "../helpers/router.ts";

const MODELS = [{ name: "fixture/dense" }];

/** Worker ids in the router's /health. */
async function healthIds(url: string): Promise<string[]> {
  const h = await getJson(`${url}/health`);
  return (h.body.workers as { id: string }[]).map((w) => w.id).sort();
}

/** Open a raw fleet socket (for protocol-level tests). */
function rawSocket(routerUrl: string, token = TEST_TOKEN): WebSocket {
  return new WebSocket(routerUrl.replace("http", "ws") + FLEET_PATH, {
    headers: { authorization: `Bearer ${token}` },
  });
}

function registerFrame(id: string, port = 1): RegisterMessage {
  return {
    type: "register",
    protocol: 1,
    worker_id: id,
    url: `http://127.0.0.1:${port}`,
    machine_profile: "cpu",
    pool: "cpu",
    bundle: "default",
    version: "0.1.0",
    gpus: { count: 0, types: [] },
    models: [{ name: "fixture/dense", bundle: "default", state: "available" }],
    draining: false,
  };
}

/** Resolve with the socket's close event (bounded). */
function closed(ws: WebSocket, ms = 5000): Promise<CloseEvent> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("socket did not close")), ms);
    ws.addEventListener("close", (e) => {
      clearTimeout(t);
      resolve(e);
    });
  });
}

Deno.test("fleet: a worker registers, shows in /health and /readyz, and leaves on close", async () => {
  const r = await startTestRouter();
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w1",
    profile: "cpu",
    models: MODELS,
  });
  try {
    await waitFor(() => w.link.connected, "registration");
    assert.deepEqual(await healthIds(r.url), ["w1"]);
    const ready = await getJson(`${r.url}/readyz`);
    assert.deepEqual(ready.body, { status: "ready", healthy_workers: 1 });
    const h = (await getJson(`${r.url}/health`)).body;
    assert.equal(h.status, "healthy");
    assert.equal(h.worker_count, 1);
    assert.deepEqual(h.gpu_types, ["cpu"]);
    assert.equal(h.workers[0].url, w.url);
    await w.link.close();
    assert.equal(w.link.connected, false);
    // The stale bound (10 s in test routers) is far off: only the closed socket can remove it.
    await waitFor(async () => (await healthIds(r.url)).length === 0, "removal");
    const empty = await getJson(`${r.url}/readyz`);
    assert.deepEqual(empty.body, { status: "ready", healthy_workers: 0 });
    assert.equal((await getJson(`${r.url}/health`)).body.status, "degraded");
  } finally {
    await w.close();
    await r.close();
  }
});

Deno.test("fleet: workers without or with a wrong token are refused, token never logged", async () => {
  const r = await startTestRouter();
  const wrong = "wrong-token-but-long-enough-123";
  const w = startFakeWorker({
    routerUrl: r.url,
    token: wrong,
    id: "intruder",
    profile: "cpu",
    models: MODELS,
  });
  try {
    await waitFor(
      async () => (await r.metrics.connections.value({ result: "unauthorized" })) >= 2,
      "two refused dials",
    );
    assert.equal(w.link.connected, false);
    assert.deepEqual(await healthIds(r.url), []);
    // A plain upgrade without any Authorization header: 401 with the error body.
    const res = await fetch(r.url + FLEET_PATH, {
      headers: {
        upgrade: "websocket",
        connection: "upgrade",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      },
    });
    assert.equal(res.status, 401);
    assert.equal((await res.json()).detail.code, "UNAUTHORIZED");
    assert.ok(w.logs.some((l) => /401/.test(l.msg)), "worker explains the refusal");
    const all = JSON.stringify(r.logs) + JSON.stringify(w.logs);
    assert.ok(!all.includes(wrong) && !all.includes(TEST_TOKEN), "no token in any log");
  } finally {
    await w.close();
    await r.close();
  }
});

Deno.test("fleet: a router without SVC_WORKER_TOKEN refuses every worker", async () => {
  const r = await startTestRouter({ SVC_WORKER_TOKEN: "" });
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w",
    profile: "cpu",
    models: MODELS,
  });
  try {
    await waitFor(
      async () => (await r.metrics.connections.value({ result: "unauthorized" })) >= 1,
      "refusal",
    );
    assert.deepEqual(await healthIds(r.url), []);
  } finally {
    await w.close();
    await r.close();
  }
});

Deno.test("fleet: status frames update load and model states; drain is acknowledged", async () => {
  const r = await startTestRouter();
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w1",
    profile: "cpu",
    models: MODELS,
  });
  try {
    await waitFor(() => w.link.connected, "registration");
    w.state.queueDepth = 4;
    w.state.models.get("fixture/dense")!.state = "loaded";
    await waitFor(async () => {
      const h = (await getJson(`${r.url}/health`)).body;
      return h.workers[0]?.queue_depth === 4 && h.loaded_models.includes("fixture/dense");
    }, "status to arrive");
    // drain() resolves on the router's ack, or after a timeout with a warning instead.
    await w.link.drain();
    assert.ok(w.logs.some((l) => l.msg === "router acknowledged drain"), "acknowledged");
    const h = (await getJson(`${r.url}/health`)).body;
    assert.equal(h.workers[0].state, "draining");
    assert.equal(h.healthy_workers, 0);
    assert.equal(h.status, "degraded");
    // Draining workers get no new requests: the pool is empty for routing.
    const res = await fetch(`${r.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-machine-profile": "cpu" },
      body: "{}",
    });
    assert.equal(res.status, 202);
    await res.body?.cancel();
  } finally {
    await w.close();
    await r.close();
  }
});

Deno.test("fleet: after a router restart the worker registers again by itself", async () => {
  const r1 = await startTestRouter();
  const port = r1.port;
  const w = startFakeWorker({
    routerUrl: r1.url,
    token: TEST_TOKEN,
    id: "w1",
    profile: "cpu",
    models: MODELS,
  });
  let r2;
  try {
    await waitFor(() => w.link.connected, "first registration");
    await r1.close();
    await waitFor(() => !w.link.connected, "link loss");
    r2 = await startTestRouter({ SVC_PORT: String(port) });
    await waitFor(async () => (await healthIds(r2!.url)).includes("w1"), "re-registration");
    const res = await fetch(`${r2.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-machine-profile": "cpu" },
      body: "{}",
    });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).worker, "w1");
  } finally {
    await w.close();
    await r2?.close();
    await r1.close();
  }
});

Deno.test("fleet: a silent (frozen) worker is removed after the stale bound", async () => {
  const r = await startTestRouter({ SVC_WORKER_STALE_MS: "600", SVC_HEARTBEAT_INTERVAL_MS: "200" });
  const ws = rawSocket(r.url);
  try {
    await new Promise((res) => (ws.onopen = res));
    const wsClosed = closed(ws, 15_000);
    const sentAt = performance.now();
    ws.send(encodeMessage(registerFrame("frozen")));
    await waitFor(async () => (await healthIds(r.url)).includes("frozen"), "registration");
    // Send nothing more: no status, no ping. Removed, but never before the 600 ms bound (a slow
    // machine only makes it later); the close code says why.
    await waitFor(async () => (await healthIds(r.url)).length === 0, "stale removal");
    const ms = performance.now() - sentAt;
    assert.ok(ms >= 590, `removed ${Math.round(ms)} ms after its last frame`);
    const ev = await wsClosed;
    assert.equal(ev.code, CLOSE_CODES.heartbeatTimeout);
  } finally {
    ws.close();
    await r.close();
  }
});

Deno.test("fleet: the worker notices a frozen router and dials again", async () => {
  // A fake router that registers the worker and then never sends another frame.
  let dials = 0;
  const sockets: WebSocket[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    dials++;
    sockets.push(socket);
    socket.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.type === "register") {
        socket.send(JSON.stringify({
          type: "registered",
          protocol: 1,
          router_version: "0.1.0",
          router_id: "frozen",
          heartbeat_interval_ms: 100,
          status_interval_ms: 200,
          stale_after_ms: 400,
        }));
      }
    };
    return response;
  });
  const logs: string[] = [];
  const link = startFleetLink({
    fleet: loadWorkerSettings({
      SVC_ROUTER_URL: `http://127.0.0.1:${server.addr.port}`,
      SVC_WORKER_TOKEN: TEST_TOKEN,
      SVC_WORKER_ID: "w-frozen-router",
      SVC_MACHINE_PROFILE: "cpu",
    }).fleet,
    port: 1,
    servedModels: () => [],
    status: () => ({
      models: [],
      queue_depth: 0,
      in_flight: 0,
      memory_used_bytes: 0,
      memory_total_bytes: 0,
      draining: false,
    }),
    log: (_l, msg) => logs.push(msg),
  })!;
  try {
    await waitFor(() => dials >= 2, "a second dial after the heartbeat bound");
    assert.ok(logs.some((l) => l.includes("router silent")));
  } finally {
    await link.close();
    for (const s of sockets) {
      try {
        s.close();
      } catch { /* closed */ }
    }
    await server.shutdown();
  }
});

Deno.test("fleet: protocol errors close the socket with an error frame", async () => {
  const r = await startTestRouter();
  try {
    const cases: [unknown, string, number][] = [
      ["not json", "INVALID_MESSAGE", CLOSE_CODES.invalidMessage],
      [
        {
          type: "status",
          seq: 0,
          models: [],
          queue_depth: 0,
          in_flight: 0,
          memory_used_bytes: 0,
          memory_total_bytes: 0,
          draining: false,
        },
        "NOT_REGISTERED",
        CLOSE_CODES.invalidMessage,
      ],
      [{ ...registerFrame("p"), protocol: 99 }, "PROTOCOL_MISMATCH", CLOSE_CODES.protocolMismatch],
    ];
    for (const [frame, code, closeCode] of cases) {
      const ws = rawSocket(r.url);
      const frames: unknown[] = [];
      ws.onmessage = (e) => frames.push(decodeRouterMessage(e.data));
      await new Promise((res) => (ws.onopen = res));
      ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
      const ev = await closed(ws);
      assert.equal(ev.code, closeCode, code);
      assert.deepEqual((frames[0] as { message: { code: string } }).message.code, code);
    }
    assert.deepEqual(await healthIds(r.url), []);
  } finally {
    await r.close();
  }
});

Deno.test("fleet: a second connection of the same worker process replaces the first", async () => {
  const r = await startTestRouter();
  const a = rawSocket(r.url);
  let b: WebSocket | undefined;
  // The same process presents the same instance key on every connection.
  const instance_key = "k".repeat(40);
  try {
    await new Promise((res) => (a.onopen = res));
    a.send(encodeMessage({ ...registerFrame("dup", 1111), instance_key }));
    await waitFor(async () => (await healthIds(r.url)).includes("dup"), "first registration");
    const aClosed = closed(a);
    b = rawSocket(r.url);
    await new Promise((res) => (b!.onopen = res));
    b.send(encodeMessage({ ...registerFrame("dup", 2222), instance_key }));
    assert.equal((await aClosed).code, CLOSE_CODES.replaced);
    await waitFor(async () => {
      const h = (await getJson(`${r.url}/health`)).body;
      return h.workers.length === 1 && h.workers[0].url === "http://127.0.0.1:2222";
    }, "replacement");
  } finally {
    a.close();
    b?.close();
    await r.close();
  }
});

Deno.test("fleet: startFleetLink returns null without SVC_ROUTER_URL", () => {
  const base = {
    port: 8080,
    servedModels: () => [],
    status: () => ({
      models: [],
      queue_depth: 0,
      in_flight: 0,
      memory_used_bytes: 0,
      memory_total_bytes: 0,
      draining: false,
    }),
    log: () => {},
  };
  assert.equal(startFleetLink({ ...base, fleet: loadWorkerSettings({}).fleet }), null);
});
