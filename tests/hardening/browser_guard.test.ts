/**
 * Issue 26.6: a web page open in the operator's browser cannot drive a local stack. Bodies must
 * be JSON or msgpack (a `text/plain`, form or multipart POST needs no CORS preflight, so it is
 * 415 on router and worker); a POST or WebSocket upgrade from another origin is 403; a loopback
 * server answers only requests whose Host names this machine (DNS rebinding); CORS is off unless
 * SVC_CORS_ORIGINS allows an origin, preflights included.
 */
import assert from "node:assert/strict";
import { startFakeWorker } from "../router/helpers/fake_worker.ts";
import { getJson, startTestRouter, TEST_TOKEN } from "../router/helpers/router.ts";
import { waitFor } from "../helpers/wait.ts";
import { startFakeBackendWorker } from "../worker/harness.ts";
import { rawRequest } from "./helpers.ts";

const JSON_BODY = JSON.stringify({ items: [{ text: "hello" }] });
const EVIL = "https://evil.example";

/** POST `body` with `contentType` (undefined: none at all) and extra headers; status and code. */
async function post(
  url: string,
  contentType: string | undefined,
  headers: Record<string, string> = {},
  body: BodyInit = new TextEncoder().encode(JSON_BODY),
): Promise<{ status: number; code?: string; headers: Headers }> {
  const h = new Headers({ accept: "application/json", "x-svc-machine-profile": "cpu", ...headers });
  if (contentType !== undefined) h.set("content-type", contentType);
  const res = await fetch(url, { method: "POST", headers: h, body });
  const text = await res.text();
  let code: string | undefined;
  try {
    code = JSON.parse(text)?.detail?.code;
  } catch {
    // a worker answer that is not an error
  }
  return { status: res.status, code, headers: res.headers };
}

/** Status of a WebSocket upgrade of `url` with `origin` (101 when accepted). */
async function upgrade(url: string, origin?: string): Promise<number> {
  const headers: Record<string, string> = {
    upgrade: "websocket",
    connection: "upgrade",
    "sec-websocket-version": "13",
    "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
  };
  if (origin) headers.origin = origin;
  const res = await fetch(url, { headers });
  await res.body?.cancel();
  return res.status;
}

/** The status line of a raw GET of `path` with `host` as the Host header. */
async function withHost(url: string, path: string, host: string): Promise<string> {
  const s = rawRequest(url, `GET ${path} HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`);
  await s.closed;
  return s.received().split("\r\n")[0];
}

/** The bodies a page can send without a preflight, and one it cannot. */
const SIMPLE: [string | undefined, BodyInit][] = [
  ["text/plain", JSON_BODY],
  ["text/plain;charset=UTF-8", JSON_BODY],
  ["application/x-www-form-urlencoded", "items=1"],
  ["multipart/form-data; boundary=x", "--x\r\n\r\n{}\r\n--x--"],
  [undefined, new Blob([JSON_BODY])], // a Blob without a type: no Content-Type at all
  ["application/json; charset=latin1", JSON_BODY],
];

Deno.test("browser guard: the router refuses what a web page could send without asking", async () => {
  const r = await startTestRouter({ SVC_MACHINE_PROFILES: "cpu" });
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w",
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "loaded" }],
  });
  try {
    await waitFor(() => w.link.connected, "the worker to register");
    const encode = `${r.url}/v1/encode/fixture%2Fdense`;
    for (const [type, body] of SIMPLE) {
      const res = await post(encode, type, {}, body);
      assert.equal(res.status, 415, `${type}`);
      assert.equal(res.code, "UNSUPPORTED_MEDIA_TYPE");
    }
    assert.equal(w.requests.length, 0, "nothing reached the worker");
    for (
      const type of ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON"]
    ) {
      assert.equal((await post(encode, type)).status, 200, type);
    }
    // An empty POST needs no type (the drain route); a foreign page cannot send it either.
    const drain = `${r.url}/v1/admin/workers/nobody/drain`;
    assert.equal((await post(drain, undefined, {}, new Uint8Array())).status, 404);
    const cross = await post(drain, undefined, { origin: EVIL }, new Uint8Array());
    assert.equal(cross.status, 403);
    assert.equal((await post(encode, "application/json", { origin: EVIL })).status, 403);
    assert.equal((await post(encode, "application/json", { origin: r.url })).status, 200);
    // WebSocket upgrades: same origin and non-browser clients yes, other origins no.
    for (const path of ["/ws/status", "/ws/cluster-status", "/fleet/v1/connect"]) {
      assert.equal(await upgrade(`${r.url}${path}`, EVIL), 403, path);
      assert.equal(await upgrade(`${r.url}${path}`, "null"), 403, path);
    }
    assert.equal(await upgrade(`${r.url}/ws/status`), 101);
    assert.equal(await upgrade(`${r.url}/ws/status`, r.url), 101);
    // A page that rebinds its own name to 127.0.0.1 sends that name as Host.
    const port = new URL(r.url).port;
    assert.match(await withHost(r.url, "/health", `evil.example:${port}`), /^HTTP\/1.1 403/);
    assert.match(await withHost(r.url, "/health", `localhost:${port}`), /^HTTP\/1.1 200/);
    // No CORS grants by default: a preflight fails, answers carry no Access-Control headers.
    const pre = await fetch(encode, {
      method: "OPTIONS",
      headers: { origin: EVIL, "access-control-request-method": "POST" },
    });
    assert.equal(pre.status, 403);
    assert.equal(pre.headers.get("access-control-allow-origin"), null);
    await pre.body?.cancel();
  } finally {
    await w.close();
    await r.close();
  }
});

Deno.test("browser guard: SVC_CORS_ORIGINS grants listed origins, preflights included", async () => {
  const app = "http://app.example:3000";
  const r = await startTestRouter({ SVC_MACHINE_PROFILES: "cpu", SVC_CORS_ORIGINS: `${app}/` });
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w",
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "loaded" }],
  });
  try {
    await waitFor(() => w.link.connected, "the worker to register");
    const encode = `${r.url}/v1/encode/fixture%2Fdense`;
    const pre = await fetch(encode, {
      method: "OPTIONS",
      headers: {
        origin: app,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, x-svc-machine-profile",
      },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get("access-control-allow-origin"), app);
    assert.match(pre.headers.get("access-control-allow-methods") ?? "", /POST/);
    assert.match(pre.headers.get("access-control-allow-headers") ?? "", /x-svc-machine-profile/);
    assert.match(pre.headers.get("access-control-allow-headers") ?? "", /cache-control/);
    const ok = await post(encode, "application/json", { origin: app });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get("access-control-allow-origin"), app);
    assert.match(ok.headers.get("access-control-expose-headers") ?? "", /X-Total-Time/);
    assert.match(ok.headers.get("access-control-expose-headers") ?? "", /X-SVC-Cache/);
    assert.equal(await upgrade(`${r.url}/ws/status`, app), 101);
    assert.equal((await post(encode, "application/json", { origin: EVIL })).status, 403);
    const other = await fetch(encode, {
      method: "OPTIONS",
      headers: { origin: EVIL, "access-control-request-method": "POST" },
    });
    assert.equal(other.status, 403);
    await other.body?.cancel();
    // GETs from a listed origin can read the answer too.
    const models = await getJson(`${r.url}/v1/models`, { headers: { origin: app } });
    assert.equal(models.headers.get("access-control-allow-origin"), app);
  } finally {
    await w.close();
    await r.close();
  }
});

Deno.test({
  name: "browser guard: the worker refuses text/plain bodies, foreign origins and other Hosts",
  async fn() {
    // In this process, through the worker's own server; its models run on a fake backend.
    const w = await startFakeBackendWorker({ SVC_CORS_ORIGINS: "http://app.example:3000" });
    try {
      // The model operations (the direct path) and the app's routes alike.
      for (const path of ["/v1/encode/fixture%2Fdense", "/v1/embeddings", "/v1/models"]) {
        for (const [type, body] of SIMPLE) {
          const res = await post(`${w.url}${path}`, type, {}, body);
          assert.equal(res.status, 415, `${path} ${type}`);
          assert.equal(res.code, "UNSUPPORTED_MEDIA_TYPE");
        }
      }
      const encode = `${w.url}/v1/encode/fixture%2Fdense`;
      assert.equal((await post(encode, "application/json")).status, 200);
      assert.equal((await post(encode, "application/json", { origin: EVIL })).status, 403);
      const granted = await post(encode, "application/json", { origin: "http://app.example:3000" });
      assert.equal(granted.status, 200);
      assert.equal(granted.headers.get("access-control-allow-origin"), "http://app.example:3000");
      assert.equal(await upgrade(`${w.url}/ws/status`, EVIL), 403);
      assert.equal(await upgrade(`${w.url}/ws/status`), 101);
      const pre = await fetch(encode, {
        method: "OPTIONS",
        headers: { origin: "http://app.example:3000", "access-control-request-method": "POST" },
      });
      assert.equal(pre.status, 204);
      const port = new URL(w.url).port;
      assert.match(await withHost(w.url, "/v1/models", `evil.example:${port}`), /^HTTP\/1.1 403/);
      assert.match(await withHost(w.url, "/v1/models", `127.0.0.1:${port}`), /^HTTP\/1.1 200/);
    } finally {
      await w.close();
    }
  },
});
