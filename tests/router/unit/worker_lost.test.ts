/**
 * Poison requests do not spread (issue 23.1): the router sends a request to a second worker only
 * when the first never received it whole (connection refused, or closed while the body was still
 * being sent). A worker that received the request and dropped the connection gets the client a
 * 502 WORKER_LOST, and nobody else sees the request. Fake workers on node:http register over the
 * real fleet link; the one preferred (it has the model loaded) misbehaves.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, startTestRouter, TEST_TOKEN, type TestRouter } from "../helpers/router.ts";
import {
  byteSum,
  type SocketBehaviour,
  type SocketWorker,
  startSocketWorker,
} from "../helpers/socket_worker.ts";

const PATH = "/v1/encode/fixture%2Fdense";
const CPU = { "x-svc-machine-profile": "cpu", "content-type": "application/json" };

/**
 * A router with worker `a` (model loaded: chosen first) and worker `b` (available). Replays of
 * dropped requests are off unless `env` turns them on: most tests here are about the poison rule.
 */
async function pair(aBehaviour: SocketBehaviour, env: Record<string, string> = {}) {
  const r = await startTestRouter({ SVC_REPLAY_MAX_BODY_BYTES: "0", ...env });
  const workers: SocketWorker[] = [];
  const close = async () => {
    for (const w of workers) await w.close();
    await r.close();
  };
  try {
    for (const [id, state] of [["a", "loaded"], ["b", "available"]] as const) {
      workers.push(
        await startSocketWorker({
          routerUrl: r.url,
          token: TEST_TOKEN,
          id,
          profile: "cpu",
          models: [{ name: "fixture/dense", state }],
        }),
      );
    }
    await waitFor(() => workers.every((w) => w.link.connected), "workers to register");
  } catch (err) {
    await close();
    throw err;
  }
  const [a, b] = workers;
  a.behaviour = aBehaviour;
  return { r, a, b, close };
}

function post(r: TestRouter, body: BodyInit) {
  return getJson(`${r.url}${PATH}`, { method: "POST", headers: CPU, body });
}

Deno.test("worker lost: a worker that drops a request it received gets 502 WORKER_LOST; nobody else sees it", async () => {
  const { r, a, b, close } = await pair("answer");
  try {
    // A first request leaves a kept connection to `a`: the dropped request below goes out on
    // it, where Deno's node:http client would replay it on a new connection by itself.
    assert.equal((await post(r, '{"items":[{"text":"warm"}]}')).body.worker, "a");
    a.behaviour = "drop_after_body";
    const res = await post(r, '{"items":[{"text":"poison"}]}');
    assert.equal(res.status, 502);
    assert.equal(res.body.detail.code, "WORKER_LOST");
    assert.match(res.body.detail.message, /dropped the connection before answering/);
    assert.match(res.body.detail.message, /not retried on another worker/);
    assert.doesNotMatch(res.body.detail.message, /127\.0\.0\.1|http:/, "no worker address");
    assert.equal(res.headers.get("retry-after"), null, "no invitation to retry");
    assert.equal(res.headers.get("x-should-retry"), "false", "OpenAI clients must not replay it");
    assert.equal(a.seen.length, 2, "the worker got the request once: no replay");
    assert.equal(b.seen.length, 0, "the other worker never saw it");
    assert.equal(await r.metrics.upstreamErrors.value({ worker_id: "a", kind: "dropped" }), 1);
    assert.equal(await r.metrics.retries.value({ reason: "unreachable" }), 0);
    const logged = r.logs.find((l) => l.msg.startsWith("worker dropped a request"));
    assert.equal(logged?.fields?.worker_id, "a", "the log names the worker for operators");
    // While its registration lingers, the worker that dropped it is passed over.
    a.behaviour = "answer";
    const next = await post(r, '{"items":[{"text":"next"}]}');
    assert.equal(next.status, 200);
    assert.equal(next.body.worker, "b");
  } finally {
    await close();
  }
});

Deno.test("worker lost: the only worker dropping a request is not asked again for it; 502, not 202", async () => {
  const { r, a, b, close } = await pair("drop_after_body");
  try {
    await b.close(); // `a` alone in the pool
    await waitFor(async () => (await getJson(`${r.url}/health`)).body.worker_count === 1, "b gone");
    const res = await post(r, '{"items":[{"text":"poison"}]}');
    assert.equal(res.status, 502);
    assert.equal(res.body.detail.code, "WORKER_LOST");
    assert.equal(a.seen.length, 1);
  } finally {
    await close();
  }
});

Deno.test("worker lost: a worker whose connection is refused costs one retry on another", async () => {
  const { r, a, b, close } = await pair("answer");
  try {
    // `a` stays registered, but nothing listens on its port any more (a killed process whose
    // fleet socket has not closed yet).
    await a.stopHttp();
    const res = await post(r, '{"items":[{"text":"hello"}]}');
    assert.equal(res.status, 200);
    assert.equal(res.body.worker, "b");
    assert.equal(b.seen.length, 1, "sent once, to the worker that can take it");
    assert.equal(await r.metrics.upstreamErrors.value({ worker_id: "a", kind: "unreachable" }), 1);
  } finally {
    await close();
  }
});

Deno.test("worker lost: a worker that closes the connection before the body is sent whole costs one retry", async () => {
  const { r, a, b, close } = await pair("drop_before_body");
  try {
    // Larger than the socket buffers can take in one go: the router is still sending when `a`
    // closes, so `a` cannot have received it.
    const body = new Uint8Array(24 * 1024 * 1024).map((_, i) => i * 31);
    const res = await post(r, body);
    assert.equal(res.status, 200);
    assert.equal(res.body.worker, "b");
    assert.equal(res.body.bytes, body.length, "the whole body, once more, to the second worker");
    assert.equal(res.body.sum, byteSum(body));
    assert.equal(a.seen.length, 1);
    assert.equal(b.seen.length, 1);
    assert.ok((await r.metrics.retries.value({ reason: "unreachable" })) >= 1);
  } finally {
    await close();
  }
});

Deno.test("worker lost: a worker that closes the connection with the request unread costs one retry, even once it was all sent", async () => {
  const { r, a, b, close } = await pair("drop_before_body");
  try {
    // 1 MiB fits in the socket buffers: every byte is handed over at once, then `a` closes with
    // most of it unread, which resets the connection instead of closing it cleanly.
    const body = new Uint8Array(1024 * 1024).map((_, i) => i * 7);
    const res = await post(r, body);
    assert.equal(res.status, 200);
    assert.equal(res.body.worker, "b");
    assert.equal(res.body.sum, byteSum(body));
    assert.equal(a.seen.length, 1, "it reached `a`, which closed with it unread");
    assert.equal(b.seen.length, 1);
    assert.equal(await r.metrics.upstreamErrors.value({ worker_id: "a", kind: "dropped" }), 0);
  } finally {
    await close();
  }
});

/** Replays as the defaults have them (small bodies, the default budget). */
const REPLAYS = { SVC_REPLAY_MAX_BODY_BYTES: "32768" };

Deno.test("worker lost: a small request a dying worker dropped goes once to another; dropped again, never", async () => {
  const { r, a, b, close } = await pair("answer", REPLAYS);
  try {
    assert.equal((await post(r, '{"items":[{"text":"warm"}]}')).body.worker, "a");
    a.behaviour = "drop_after_body";
    const body = '{"items":[{"text":"a bystander"}]}';
    const res = await post(r, body);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.worker, "b", "replayed on the other worker");
    assert.equal(b.seen.length, 1);
    assert.equal(await r.metrics.retries.value({ reason: "dropped" }), 1);
    // The same body at a second death: it is what kills workers, and is never sent again.
    b.behaviour = "drop_after_body";
    const again = await post(r, body);
    assert.equal(again.status, 502);
    assert.equal(again.body.detail.code, "WORKER_LOST");
    assert.equal(again.headers.get("x-should-retry"), "false");
    assert.equal(a.seen.length, 2, "a never saw it again");
    assert.equal(await r.metrics.retries.value({ reason: "dropped" }), 1);
  } finally {
    await close();
  }
});

Deno.test("worker lost: a large body is never replayed, nor one past the retry budget", async () => {
  const big = await pair("drop_after_body", { SVC_REPLAY_MAX_BODY_BYTES: "64" });
  try {
    const res = await post(big.r, JSON.stringify({ items: [{ text: "x".repeat(100) }] }));
    assert.equal(res.status, 502);
    assert.equal(res.body.detail.code, "WORKER_LOST");
    assert.equal(big.b.seen.length, 0);
  } finally {
    await big.close();
  }
  const spent = await pair("drop_after_body", {
    ...REPLAYS,
    SVC_RETRY_BUDGET_MIN: "1",
    SVC_RETRY_BUDGET_PERCENT: "0",
  });
  try {
    const first = await post(spent.r, '{"items":[{"text":"one"}]}');
    assert.equal(first.status, 200, "the budget's one replay");
    spent.b.behaviour = "drop_after_body";
    const second = await post(spent.r, '{"items":[{"text":"two"}]}');
    assert.equal(second.status, 502, "the budget is spent");
    assert.equal(await spent.r.metrics.retries.value({ reason: "dropped" }), 1);
  } finally {
    await spent.close();
  }
});

Deno.test("worker lost: a replay with no other worker to go to is the WORKER_LOST answer", async () => {
  const { r, a, b, close } = await pair("drop_after_body", REPLAYS);
  try {
    await b.close();
    await waitFor(async () => (await getJson(`${r.url}/health`)).body.worker_count === 1, "b gone");
    const res = await post(r, '{"items":[{"text":"alone"}]}');
    assert.equal(res.status, 502);
    assert.equal(res.body.detail.code, "WORKER_LOST");
    assert.equal(a.seen.length, 1);
  } finally {
    await close();
  }
});
