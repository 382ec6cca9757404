/**
 * The router's in-flight body budget over each body's whole life (issue 23.4), read from
 * `svc_router_body_bytes_held`: bytes count from the first one until the answer is complete
 * (forwarded and answered, waiting for capacity included), and nothing stays counted after a
 * 202, a 404, an error, a lost worker or a client that went away.
 */
import assert from "node:assert/strict";
import { rawRequest, type RawSocket } from "../../hardening/helpers.ts";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, startTestRouter, TEST_TOKEN, type TestRouter } from "../helpers/router.ts";
import { type SocketWorker, startSocketWorker } from "../helpers/socket_worker.ts";

const KiB = 1024;
const PATH = "/v1/encode/fixture%2Fdense";

/** Request-body bytes the router holds, from its /metrics. */
async function held(r: TestRouter): Promise<number> {
  const text = await (await fetch(`${r.url}/metrics`)).text();
  const m = /^svc_router_body_bytes_held (\d+)$/m.exec(text);
  assert.ok(m, "svc_router_body_bytes_held is exposed");
  return Number(m[1]);
}

/** A router with one socket worker `w` (profile cpu) serving fixture/dense. */
async function routerWithWorker(env: Record<string, string> = {}) {
  const r = await startTestRouter({ SVC_MACHINE_PROFILES: "cpu,gpu", ...env });
  let w: SocketWorker | undefined;
  const close = async () => {
    await w?.close();
    await r.close();
  };
  try {
    w = await startSocketWorker({
      routerUrl: r.url,
      token: TEST_TOKEN,
      id: "w",
      profile: "cpu",
      models: [{ name: "fixture/dense", state: "loaded" }],
    });
    await waitFor(() => w!.link.connected, "the worker to register");
  } catch (err) {
    await close();
    throw err;
  }
  return { r, w, close };
}

/** Headers of a POST declaring `length` bytes. */
function head(path: string, length: number, profile = "cpu"): string {
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `X-SVC-Machine-Profile: ${profile}\r\nContent-Length: ${length}\r\n\r\n`;
}

Deno.test("body hold: counted from the first byte until the answer is sent", async () => {
  const { r, w, close } = await routerWithWorker();
  let s: RawSocket | undefined;
  try {
    w.behaviour = "hold";
    s = rawRequest(r.url, head(PATH, 100 * KiB) + "x".repeat(40 * KiB));
    await waitFor(async () => await held(r) === 40 * KiB, "the first 40 KiB to be counted");
    s.socket.write("x".repeat(60 * KiB));
    await waitFor(() => w.seen.length === 1, "the body to be forwarded");
    assert.equal(w.seen[0].bytes, 100 * KiB);
    assert.equal(await held(r), 100 * KiB, "still counted: forwarded, not yet answered");
    w.releaseHeld();
    await waitFor(() => /^HTTP\/1\.1 200 /.test(s!.received()), "the answer");
    await waitFor(async () => await held(r) === 0, "the bytes to be given back");
  } finally {
    s?.socket.destroy();
    await close();
  }
});

Deno.test("body hold: a held body counts against the budget of later ones until it is answered", async () => {
  const { r, w, close } = await routerWithWorker({
    SVC_MAX_BODY_BYTES: String(1024 * KiB),
    SVC_MAX_INFLIGHT_BODY_BYTES: String(1024 * KiB),
  });
  try {
    w.behaviour = "hold";
    const body = "x".repeat(700 * KiB);
    const headers = { "x-svc-machine-profile": "cpu", "content-type": "application/json" };
    const first = getJson(`${r.url}${PATH}`, { method: "POST", headers, body });
    await waitFor(() => w.seen.length === 1, "the first body to reach the worker");
    // Read long ago, but still in memory until its answer: the second does not fit beside it.
    const second = await getJson(`${r.url}${PATH}`, { method: "POST", headers, body });
    assert.equal(second.status, 503);
    assert.equal(second.body.detail.code, "QUEUE_FULL");
    assert.match(second.body.detail.message, /SVC_MAX_INFLIGHT_BODY_BYTES/);
    assert.equal(second.headers.get("retry-after"), "1");
    w.releaseHeld();
    assert.equal((await first).status, 200);
    w.behaviour = "answer";
    await waitFor(async () => await held(r) === 0, "the first body's bytes to be given back");
    const third = await getJson(`${r.url}${PATH}`, { method: "POST", headers, body });
    assert.equal(third.status, 200, "room again once the first was answered");
  } finally {
    await close();
  }
});

Deno.test("body hold: nothing stays counted after 202, 404, 400, 502 WORKER_LOST or a client gone", async () => {
  const { r, w, close } = await routerWithWorker({ SVC_MAX_BODY_BYTES: String(256 * KiB) });
  const sockets: RawSocket[] = [];
  try {
    const answered = async (s: RawSocket, status: number) => {
      sockets.push(s);
      await waitFor(() => s.received().includes("\r\n\r\n"), `a ${status}`);
      assert.match(s.received(), new RegExp(`^HTTP/1\\.1 ${status} `));
      await waitFor(async () => await held(r) === 0, `nothing held after the ${status}`);
    };
    const body = "x".repeat(100 * KiB);
    // 202: the gpu pool is empty; the body is never read.
    await answered(rawRequest(r.url, head(PATH, body.length, "gpu") + body), 202);
    // 404: the cpu pool does not serve that model; never read either.
    await answered(rawRequest(r.url, head("/v1/encode/acme%2Fnone", body.length) + body), 404);
    // 400: a chunked body that passes SVC_MAX_BODY_BYTES part-way.
    const chunked = rawRequest(
      r.url,
      `POST ${PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-SVC-Machine-Profile: cpu\r\n` +
        "Transfer-Encoding: chunked\r\n\r\n",
    );
    for (let i = 0; i < 3; i++) chunked.socket.write(`${(100 * KiB).toString(16)}\r\n${body}\r\n`);
    await answered(chunked, 400);
    // 502: the worker dropped the request it received.
    w.behaviour = "drop_after_body";
    await answered(rawRequest(r.url, head(PATH, body.length) + body), 502);
    // A client that goes away while the worker works: its bytes go back, the work is cancelled.
    w.behaviour = "hold";
    const gone = rawRequest(r.url, head(PATH, body.length) + body);
    sockets.push(gone);
    await waitFor(() => w.seen.length === 2, "the body to reach the worker");
    assert.equal(await held(r), body.length);
    gone.socket.destroy();
    await waitFor(async () => await held(r) === 0, "nothing held after the client left");
    await waitFor(() => w.cancelled === 1, "the worker's request to be cancelled");
  } finally {
    for (const s of sockets) s.socket.destroy();
    await close();
  }
});

Deno.test("body hold: /v1/embeddings holds its body while it waits for capacity", async () => {
  const { r, close } = await routerWithWorker({ SVC_EMBEDDINGS_WAIT_MS: "3000" });
  try {
    const body = JSON.stringify({ model: "fixture/dense", input: "x".repeat(50 * KiB) });
    const waiting = getJson(`${r.url}/v1/embeddings`, {
      method: "POST",
      headers: { "x-svc-machine-profile": "gpu", "content-type": "application/json" },
      body,
    });
    await waitFor(async () => await held(r) === body.length, "the waiting body to be counted");
    const res = await waiting;
    assert.equal(res.status, 503);
    assert.equal(res.body.detail.code, "NO_CAPACITY");
    await waitFor(async () => await held(r) === 0, "nothing held after the 503");
  } finally {
    await close();
  }
});
