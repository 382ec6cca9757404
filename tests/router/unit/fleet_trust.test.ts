/**
 * A worker token is not a skeleton key (issue 16.5): attacks by a machine that holds the fleet
 * token, over real sockets against a real router. Each test failed before the fix.
 */
import assert from "node:assert/strict";
import { CLOSE_CODES } from "@svc/shared/fleet/protocol";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import {
  openRogue,
  registered,
  registerFrame,
  type RogueSocket,
  statusFrame,
} from "../helpers/rogue_worker.ts";
import { getJson, startTestRouter, TEST_TOKEN, type TestRouter } from "../helpers/router.ts";

/** An HTTP server that records what reaches it and answers with hostile headers. */
function hostileServer(): { url: string; hits: string[]; close: () => Promise<void> } {
  const hits: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    hits.push(new URL(req.url).pathname);
    await req.body?.cancel();
    return new Response(JSON.stringify({ ok: true }), {
      headers: {
        "content-type": "application/json",
        "set-cookie": "session=stolen; Path=/",
        "access-control-allow-origin": "*",
        "access-control-allow-credentials": "true",
        location: "https://evil.example/",
        "content-security-policy": "script-src *",
        "x-total-time": "1.00",
        "x-trace-id": "t-9",
        "retry-after": "3",
      },
    });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, hits, close: () => server.shutdown() };
}

async function healthWorkers(r: TestRouter): Promise<{ id: string; url: string }[]> {
  return (await getJson(`${r.url}/health`)).body.workers;
}

function encode(r: TestRouter, model = "fixture/dense"): Promise<Response> {
  return fetch(`${r.url}/v1/encode/${encodeURIComponent(model)}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-svc-machine-profile": "cpu" },
    body: JSON.stringify({ items: [{ text: "secret client text" }] }),
  });
}

Deno.test("fleet trust: advertised URLs are scheme, host and port only", async () => {
  const r = await startTestRouter({ SVC_MACHINE_PROFILES: "cpu" });
  const evil = hostileServer();
  try {
    for (
      const url of [
        `${evil.url}/any/path#`,
        `${evil.url}/steal`,
        `${evil.url}?`,
        `${evil.url}/?q=1`,
        `${evil.url}#`,
        `http://user:pw@127.0.0.1:${new URL(evil.url).port}`,
        `ftp://127.0.0.1:21`,
      ]
    ) {
      const s = await openRogue(r.url);
      s.send(registerFrame("rogue", url));
      const ev = await s.closed;
      assert.equal(ev.code, CLOSE_CODES.invalidMessage, url);
      assert.equal(s.frames[0]?.type, "error", url);
    }
    assert.deepEqual(await healthWorkers(r), []);
    const res = await encode(r, "BAAI/bge-base-en-v1.5");
    assert.equal(res.status, 202, "no worker: the pool provisions");
    await res.body?.cancel();
    assert.deepEqual(evil.hits, [], "no client request reached the rogue server");
    // A trailing slash is the same origin: accepted, and stored without it.
    const ok = await openRogue(r.url);
    ok.send(registerFrame("fine", `${evil.url}/`));
    await registered(ok);
    assert.equal((await healthWorkers(r))[0].url, evil.url);
    ok.close();
  } finally {
    await evil.close();
    await r.close();
  }
});

Deno.test("fleet trust: SVC_WORKER_ALLOWED_NETWORKS restricts where workers may point", async () => {
  const r = await startTestRouter({ SVC_WORKER_ALLOWED_NETWORKS: "10.0.0.0/8, fd00::/8" });
  const r2 = await startTestRouter({ SVC_WORKER_ALLOWED_NETWORKS: "127.0.0.0/8" });
  try {
    for (const url of ["http://127.0.0.1:9000", "http://localhost:9000", "http://[::1]:9000"]) {
      const s = await openRogue(r.url);
      s.send(registerFrame("outside", url));
      assert.equal((await s.closed).code, CLOSE_CODES.invalidMessage, url);
    }
    for (const url of ["http://10.1.2.3:9000", "http://[fd00::5]:9000"]) {
      const s = await openRogue(r.url);
      s.send(registerFrame(`inside-${url.length}`, url));
      await registered(s);
      s.close();
    }
    const s = await openRogue(r2.url);
    s.send(registerFrame("loopback", "http://127.0.0.1:9000"));
    await registered(s);
    s.close();
  } finally {
    await r.close();
    await r2.close();
  }
});

Deno.test("fleet trust: a live worker's id cannot be taken over by another connection", async () => {
  const r = await startTestRouter();
  const real = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "gpu-1",
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "loaded" }],
  });
  const evil = hostileServer();
  const rogues: RogueSocket[] = [];
  try {
    await waitFor(() => real.link.connected, "the real worker to register");
    for (const instance_key of [undefined, "x".repeat(48)]) {
      const s = await openRogue(r.url);
      rogues.push(s);
      s.send(registerFrame("gpu-1", evil.url, instance_key ? { instance_key } : {}));
      const ev = await s.closed;
      assert.equal(ev.code, CLOSE_CODES.idInUse);
      const err = s.frames.find((f) => f.type === "error");
      assert.equal(err?.type === "error" ? err.code : undefined, "ID_IN_USE");
    }
    assert.ok(real.link.connected, "the real worker keeps its socket");
    assert.deepEqual(
      (await healthWorkers(r)).map((w) => [w.id, w.url]),
      [["gpu-1", real.url]],
    );
    const res = await encode(r);
    assert.equal(res.status, 200);
    assert.equal((await res.json()).worker, "gpu-1");
    assert.deepEqual(evil.hits, []);
    // Once the real worker is gone, the id is free again.
    await real.close();
    await waitFor(async () => (await healthWorkers(r)).length === 0, "removal");
    const s = await openRogue(r.url);
    rogues.push(s);
    s.send(registerFrame("gpu-1", evil.url));
    await registered(s);
  } finally {
    for (const s of rogues) s.close();
    await real.close();
    await evil.close();
    await r.close();
  }
});

Deno.test("fleet trust: only the headers the API defines reach clients", async () => {
  const r = await startTestRouter();
  const evil = hostileServer();
  const s = await openRogue(r.url);
  try {
    s.send(registerFrame("rogue", evil.url));
    await registered(s);
    const res = await encode(r);
    assert.equal(res.status, 200);
    await res.body?.cancel();
    const names = [...res.headers.keys()].sort();
    for (const bad of ["set-cookie", "access-control-allow-origin", "location"]) {
      assert.equal(res.headers.get(bad), null, `${bad} is not passed on`);
    }
    assert.equal(res.headers.get("access-control-allow-credentials"), null);
    assert.equal(res.headers.get("content-security-policy"), null);
    assert.equal(res.headers.get("x-total-time"), "1.00");
    assert.equal(res.headers.get("x-trace-id"), "t-9");
    assert.equal(res.headers.get("retry-after"), "3");
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.equal(res.headers.get("x-svc-worker-id"), null, "worker ids are fleet detail");
    assert.ok(
      names.every((n) =>
        [
          // The router's own server adds these two (node:http keeps the connection alive).
          "connection",
          "keep-alive",
          "content-length",
          "content-type",
          "date",
          "retry-after",
          "vary",
          "x-sie-server-version",
          // The router's result cache says what it did (never from the worker).
          "x-svc-cache",
          "x-svc-model-revision",
          "x-svc-server-version",
          "x-total-time",
          "x-trace-id",
          // The router's own, on every answer (the client's id, else the trace id).
          "x-request-id",
        ].includes(n)
      ),
      `unexpected headers: ${names.join(", ")}`,
    );
  } finally {
    s.close();
    await evil.close();
    await r.close();
  }
});

Deno.test("fleet trust: a socket flooding frames is closed; the router stays responsive", async () => {
  const r = await startTestRouter();
  const s = await openRogue(r.url);
  try {
    s.send(registerFrame("chatty", "http://127.0.0.1:9"));
    await registered(s);
    for (let i = 0; i < 2000 && s.ws.readyState === WebSocket.OPEN; i++) {
      s.send({ type: "ping", t: i });
    }
    await s.closed;
    // The close code is lost to a client that is still sending; the error frame says why.
    const err = s.frames.find((f) => f.type === "error");
    assert.equal(err?.type === "error" ? err.code : undefined, "RATE_LIMITED");
    const start = performance.now();
    const res = await fetch(`${r.url}/healthz`);
    await res.body?.cancel();
    assert.equal(res.status, 200);
    assert.ok(performance.now() - start < 1000, "probe answered promptly");
    await waitFor(async () => (await healthWorkers(r)).length === 0, "the flooder removed");
    assert.ok((await r.metrics.connections.value({ result: "rate_limited" })) >= 1);
  } finally {
    s.close();
    await r.close();
  }
});

Deno.test("fleet trust: status frames naming thousands of new models stay bounded and linear", async () => {
  // Frame and byte caps lifted: this measures the merge, not the rate limits.
  const r = await startTestRouter({
    SVC_WORKER_MAX_FRAMES_PER_S: "10000",
    SVC_FLEET_MAX_STATUS_BYTES_PER_S: String(1 << 30),
    SVC_WORKER_MAX_MODELS: "1000",
    SVC_MAX_LEARNED_MODELS: "3000",
    SVC_WORKER_STALE_MS: "60000",
  });
  const s = await openRogue(r.url);
  try {
    const names = (k: number) => Array.from({ length: 1000 }, (_, i) => `org/m-${k}-${i}`);
    s.send(registerFrame("hoarder", "http://127.0.0.1:9", {
      models: names(0).map((name) => ({ name, bundle: "default", state: "available" })),
    }));
    await registered(s);
    const FRAMES = 200;
    const start = performance.now();
    for (let k = 1; k <= FRAMES; k++) s.send(statusFrame(k, names(k)));
    s.send({ type: "drain", reason: "barrier" });
    // The ack of the drain notice comes once every status frame before it was handled.
    await waitFor(() => s.frames.some((f) => f.type === "ack"), "ack", 60_000);
    const ms = performance.now() - start;
    const record = r.directory.snapshot().find((w) => w.id === "hoarder");
    assert.ok(record, "the worker is still registered");
    assert.equal(record.models.length, 1000, "a worker's list stays at SVC_WORKER_MAX_MODELS");
    assert.ok(r.directory.learnedBundles().size <= 3000, "remembered pairs stay bounded");
    // Before the fix the list grew by 1000 per frame (201,000 models) and 200 frames took 11 s.
    assert.ok(ms < 10_000, `200 frames of 1000 models handled in ${ms.toFixed(0)} ms`);
    console.log(`200 status frames of 1000 new models: ${ms.toFixed(0)} ms`);
  } finally {
    s.close();
    await r.close();
  }
});
