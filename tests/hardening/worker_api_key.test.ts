/**
 * Issue 16.8, worker half: with `SVC_WORKER_API_KEY` set, a worker cannot be used around the
 * router: everything but the probes needs `Authorization: Bearer <key>` (the router sends it on
 * every request it forwards; the same setting tells it the key). The worker runs in this process
 * on a fake backend (the key is checked before any model is asked), through its own HTTP server.
 */
import assert from "node:assert/strict";
import { VERSION } from "@svc/shared/version";
import { startFakeBackendWorker } from "../worker/harness.ts";
import { keyProtocol } from "@svc/shared/http/ws_auth";
import { WorkerKeys } from "@svc/shared/fleet/worker_keys";
import { Hono } from "hono";
import { honoRequestView, stepMiddleware } from "@svc/shared/http/steps";
import { apiKeyStep, workerKeyCheck } from "#worker/server/api_key.ts";

const KEY = "worker-key-for-tests-3b9f1c27e5";

Deno.test({
  name: "worker API key: probes stay open, everything else needs the key",
  async fn() {
    const w = await startFakeBackendWorker({ SVC_WORKER_API_KEY: KEY, SVC_LOG_LEVEL: "debug" });
    try {
      const get = async (path: string, auth?: string, init: RequestInit = {}) => {
        const headers = new Headers(init.headers);
        if (auth !== undefined) headers.set("authorization", auth);
        const res = await fetch(`${w.url}${path}`, { ...init, headers });
        const text = await res.text();
        return {
          status: res.status,
          text,
          wwwAuth: res.headers.get("www-authenticate"),
          version: res.headers.get("x-svc-server-version"),
        };
      };
      for (const probe of ["/healthz", "/readyz"]) assert.equal((await get(probe)).status, 200);
      // The page is static (no data): open, so a browser can show its key form.
      assert.equal((await get("/")).status, 200);
      const encode: RequestInit = {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ items: [{ text: "hello" }] }),
      };
      for (const path of ["/v1/models", "/metrics"]) {
        for (const auth of [undefined, "Bearer wrong-key", `Basic ${btoa(`x:${KEY}`)}`, KEY]) {
          const r = await get(path, auth);
          assert.equal(r.status, 401, `${path} with ${auth}`);
          assert.match(r.text, /UNAUTHORIZED/);
          assert.equal(r.wwwAuth, "Bearer");
        }
        assert.equal((await get(path, `Bearer ${KEY}`)).status, 200, path);
      }
      // The model operations (served without the app) check the same key the same way.
      for (const path of ["/v1/encode/x", "/v1/score/x", "/v1/extract/x", "/v1/embeddings"]) {
        for (const auth of [undefined, "Bearer wrong-key", `Basic ${btoa(`x:${KEY}`)}`, KEY]) {
          const r = await get(path, auth, encode);
          assert.equal(r.status, 401, `${path} with ${auth}`);
          assert.match(r.text, /UNAUTHORIZED/);
          assert.equal(r.wwwAuth, "Bearer");
          assert.equal(r.version, VERSION);
        }
      }
      // The status stream: the key as a header, or (a browser) as a subprotocol; never in the URL.
      const upgrade = {
        upgrade: "websocket",
        connection: "upgrade",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      };
      const ws = async (path: string, headers: Record<string, string>) => {
        const res = await fetch(`${w.url}${path}`, { headers: { ...upgrade, ...headers } });
        await res.body?.cancel();
        return { status: res.status, protocol: res.headers.get("sec-websocket-protocol") };
      };
      assert.equal((await ws("/ws/status", {})).status, 401);
      assert.equal((await ws("/ws/status", { authorization: `Bearer ${KEY}` })).status, 101);
      const viaProtocol = await ws("/ws/status", {
        "sec-websocket-protocol": `svc.status, ${keyProtocol(KEY)}`,
      });
      assert.deepEqual(viaProtocol, { status: 101, protocol: "svc.status" });
      const wrong = await ws("/ws/status", {
        "sec-websocket-protocol": `svc.status, ${keyProtocol("not-the-key-0000")}`,
      });
      assert.equal(wrong.status, 401);
      assert.equal((await ws(`/ws/status?key=${KEY}`, {})).status, 401);
      // A key subprotocol on a plain request is no key.
      assert.equal(
        (await get("/metrics", undefined, {
          headers: { "sec-websocket-protocol": keyProtocol(KEY) },
        })).status,
        401,
      );
      const ok = await get("/v1/encode/fixture/dense", `Bearer ${KEY}`, encode);
      assert.equal(ok.status, 200, ok.text);
      // The key never reaches the log.
      assert.ok(w.logs.length > 0);
      assert.ok(!w.logs.some((l) => l.includes(KEY)));
    } finally {
      await w.close();
    }
  },
});

Deno.test("worker API key: a fleet worker's stream takes its own derived key as a subprotocol", async () => {
  // The key step every worker request passes (worker/server/pipeline.ts), for worker gpu-1.
  const app = new Hono();
  const step = apiKeyStep(workerKeyCheck(KEY, "gpu-1"));
  app.use("*", stepMiddleware(step, honoRequestView, () => "native"));
  app.get("/ws/status", (c) => c.text("accepted"));
  const keys = new WorkerKeys(KEY);
  const upgrade = (key: string) =>
    app.request("/ws/status", {
      headers: {
        upgrade: "websocket",
        connection: "upgrade",
        "sec-websocket-protocol": `svc.status, ${keyProtocol(key)}`,
      },
    });
  assert.equal((await upgrade(await keys.requestKey("gpu-1"))).status, 200, "its own key");
  assert.equal((await upgrade(KEY)).status, 200, "the fleet's worker secret");
  assert.equal((await upgrade(await keys.requestKey("gpu-2"))).status, 401, "another's key");
});
