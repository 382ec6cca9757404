/**
 * Issue 16.8 and 16.5 on the router, with real processes: with SVC_API_KEYS set, nothing that
 * describes the fleet is public (/health with worker URLs, /metrics, the dashboard, both status
 * streams) unless SVC_STATUS_PUBLIC says so; the probes stay open; a blank key list refuses to
 * start; and a router given SVC_WORKER_API_KEY reaches workers that require it (with each worker's
 * own key derived from it), while the workers refuse anyone who goes around it.
 */
import assert from "node:assert/strict";
import {
  fleetEnv,
  spawnDeno,
  startRouterProcess,
  startWorkerProcess,
} from "../../observability/helpers/process.ts";
import { waitForWorkers } from "../../hardening/helpers.ts";
import { keyProtocol } from "@svc/shared/http/ws_auth";

const KEY = "router-client-key-7c1e";
const ADMIN_KEY = "router-admin-key-for-tests-93b2";
const WORKER_KEY = "worker-api-key-for-tests-51d0";
/** What a client key opens (`/health`: its summary), and what needs an admin key. */
const CLIENT_PATHS = ["/health"];
const ADMIN_PATHS = ["/metrics"];
const CLIENT_STREAMS = ["/ws/status"];
const ADMIN_STREAMS = ["/ws/cluster-status"];

/** Status of a GET (body discarded). */
async function statusOf(url: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(20_000) });
  await res.body?.cancel();
  return res.status;
}

/** Status of a WebSocket upgrade request (101 when accepted). */
async function upgradeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return await statusOf(url, {
    upgrade: "websocket",
    connection: "upgrade",
    "sec-websocket-version": "13",
    "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
    ...headers,
  });
}

Deno.test({
  name:
    "router status auth: fleet details need an admin key, the summary a client key; probes stay open",
  async fn() {
    const keys = { SVC_API_KEYS: KEY, SVC_ADMIN_KEYS: ADMIN_KEY };
    const r = await startRouterProcess(keys);
    const open = await startRouterProcess({ ...keys, SVC_STATUS_PUBLIC: "1" });
    try {
      const auth = { authorization: `Bearer ${KEY}` };
      const admin = { authorization: `Bearer ${ADMIN_KEY}` };
      for (const p of ["/healthz", "/readyz", "/"]) assert.equal(await statusOf(r.url + p), 200, p);
      for (const p of [...CLIENT_PATHS, ...ADMIN_PATHS]) {
        assert.equal(await statusOf(r.url + p), 401, p);
        assert.equal(await statusOf(r.url + p, { authorization: "Bearer wrong-key-0000" }), 401);
        assert.equal(await statusOf(r.url + p, auth), CLIENT_PATHS.includes(p) ? 200 : 403, p);
        assert.equal(await statusOf(r.url + p, admin), 200, p);
        assert.equal(await statusOf(open.url + p), 200, `${p} with SVC_STATUS_PUBLIC`);
      }
      // The page holds no data: always served (above), its streams ask for a key.
      for (const p of [...CLIENT_STREAMS, ...ADMIN_STREAMS]) {
        assert.equal(await upgradeStatus(r.url + p), 401, p);
        assert.equal(await upgradeStatus(r.url + p, auth), CLIENT_STREAMS.includes(p) ? 101 : 403);
        assert.equal(await upgradeStatus(r.url + p, admin), 101, p);
        assert.equal(await upgradeStatus(open.url + p), 101, `${p} with SVC_STATUS_PUBLIC`);
        // A browser sends the key as a subprotocol (never in the URL); only svc.status is answered.
        const offer = (key: string) => ({
          "sec-websocket-protocol": `svc.status, ${keyProtocol(key)}`,
        });
        const client = CLIENT_STREAMS.includes(p) ? 101 : 403;
        assert.equal(await upgradeStatus(r.url + p, offer(KEY)), client, `${p} client key`);
        assert.equal(await upgradeStatus(r.url + p, offer(ADMIN_KEY)), 101, `${p} admin key`);
        assert.equal(await upgradeStatus(r.url + p, offer("wrong-key-0000")), 401, p);
        assert.equal(await upgradeStatus(`${r.url}${p}?api_key=${KEY}`), 401, `${p} key in URL`);
        const inUrl = `${r.url}${p}?api_key=${ADMIN_KEY}`;
        assert.equal(await upgradeStatus(inUrl), 401, `${p} admin key in URL`);
      }
      const out = r.proc.output();
      assert.ok(!out.includes(KEY) && !out.includes(ADMIN_KEY), "keys never reach the log");
    } finally {
      await r.proc.stop();
      await open.proc.stop();
    }
  },
});

Deno.test({
  name: "router status auth: a set but blank SVC_API_KEYS refuses to start",
  async fn() {
    for (const blank of ["", "   ", " , ,"]) {
      const proc = spawnDeno(["run", "-P=router", "router/main.ts"], {
        SVC_HOST: "127.0.0.1",
        SVC_PORT: "0",
        SVC_API_KEYS: blank,
      });
      try {
        const st = await proc.status;
        assert.equal(st.code, 2, `SVC_API_KEYS=${JSON.stringify(blank)}`);
        assert.match(proc.output(), /SVC_API_KEYS is set but holds no key/);
      } finally {
        await proc.stop();
      }
    }
  },
});

Deno.test({
  name:
    "router status auth: the router reaches workers keyed by SVC_WORKER_API_KEY; the worker refuses others",
  async fn() {
    const r = await startRouterProcess({
      SVC_WORKER_API_KEY: WORKER_KEY,
      SVC_DEFAULT_MACHINE_PROFILE: "cpu",
    });
    let w;
    try {
      w = await startWorkerProcess({
        ...fleetEnv(r.url, "keyed-worker"),
        SVC_WORKER_API_KEY: WORKER_KEY,
      });
      await waitForWorkers(r.url, 1);
      const encode: RequestInit = {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ items: [{ text: "hello" }] }),
      };
      const through = await fetch(`${r.url}/v1/encode/fixture%2Fdense`, encode);
      assert.equal(through.status, 200, await through.clone().text());
      await through.body?.cancel();
      // /v1/models asks the worker too: its fixture models are listed, not only the catalog's.
      const models = await (await fetch(`${r.url}/v1/models`)).json();
      assert.ok(
        models.models.some((m: { name: string }) => m.name === "fixture/dense"),
        "the worker answered the router's catalog request",
      );
      const around = await fetch(`${w.url}/v1/encode/fixture%2Fdense`, encode);
      assert.equal(around.status, 401);
      await around.body?.cancel();
      for (const out of [r.proc.output(), w.proc.output()]) assert.ok(!out.includes(WORKER_KEY));
    } finally {
      await w?.proc.stop();
      await r.proc.stop();
    }
  },
});
