/**
 * A router that has just started holds model requests for a pool without a serving worker for
 * SVC_STARTUP_HOLD_MS (after a restart its workers reconnect within a few seconds), or for a pool it does not know yet, instead of
 * answering 202; a 202 given to a request that arrived in that time says `Retry-After: 1`, and
 * once the hold is over, 202s are immediate with SVC_PROVISION_RETRY_AFTER_S as before.
 */
import assert from "node:assert/strict";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { startTestRouter, TEST_TOKEN, type TestRouter } from "../helpers/router.ts";

const HEADERS = { "content-type": "application/json", "x-svc-machine-profile": "cpu" };

async function encode(
  r: TestRouter,
  headers: Record<string, string> = HEADERS,
): Promise<{ status: number; retry: string | null; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${r.url}/v1/encode/fixture%2Fdense`, {
    method: "POST",
    headers,
    body: JSON.stringify({ items: [{ text: "hello" }] }),
  });
  await res.body?.cancel();
  return { status: res.status, retry: res.headers.get("retry-after"), ms: performance.now() - t0 };
}

Deno.test("startup hold: a request waits for the workers that come back, not a 202", async () => {
  const r = await startTestRouter({ SVC_STARTUP_HOLD_MS: "5000", SVC_MACHINE_PROFILES: "cpu" });
  let w: ReturnType<typeof startFakeWorker> | undefined;
  try {
    const asked = encode(r);
    await new Promise((res) => setTimeout(res, 300));
    w = startFakeWorker({
      routerUrl: r.url,
      token: TEST_TOKEN,
      id: "w1",
      profile: "cpu",
      models: [{ name: "fixture/dense", state: "loaded" }],
    });
    const answer = await asked;
    assert.equal(answer.status, 200);
    assert.ok(answer.ms >= 250 && answer.ms < 4000, `${answer.ms} ms`);
  } finally {
    await w?.close();
    await r.close();
  }
});

Deno.test("startup hold: bounded; its 202 says Retry-After: 1, later ones the setting", async () => {
  // A hold long enough that "held" and "answered at once" stay apart on a busy machine.
  const r = await startTestRouter({ SVC_STARTUP_HOLD_MS: "1500", SVC_MACHINE_PROFILES: "cpu" });
  try {
    const held = await encode(r);
    assert.equal(held.status, 202);
    assert.equal(held.retry, "1");
    assert.ok(held.ms >= 1200, `${held.ms} ms`);
    const later = await encode(r);
    assert.equal(later.status, 202);
    assert.equal(later.retry, "10");
    assert.ok(later.ms < 1200, `${later.ms} ms`);
  } finally {
    await r.close();
  }
});

Deno.test("startup hold: a pool the router does not know yet is waited for too, then its 4xx", async () => {
  const r = await startTestRouter({ SVC_STARTUP_HOLD_MS: "5000" });
  let w: ReturnType<typeof startFakeWorker> | undefined;
  try {
    // Profiles are an allow-list: configured, or registered by a worker, which after a restart
    // has not happened yet.
    const l4 = { "content-type": "application/json", "x-svc-machine-profile": "l4" };
    const asked = encode(r, l4);
    await new Promise((res) => setTimeout(res, 300));
    w = startFakeWorker({
      routerUrl: r.url,
      token: TEST_TOKEN,
      id: "w-l4",
      profile: "l4",
      pool: "l4",
      models: [{ name: "fixture/dense", state: "loaded" }],
    });
    assert.equal((await asked).status, 200);
  } finally {
    await w?.close();
    await r.close();
  }
  const short = await startTestRouter({ SVC_STARTUP_HOLD_MS: "300" });
  try {
    const never = await encode(short, {
      "content-type": "application/json",
      "x-svc-machine-profile": "nobody-has-it",
    });
    // After the hold, what it is without one: fixture/dense is no catalog model of the router's,
    // so a name with no pool to tell is a 404 (a known model's would be the profile's 400).
    assert.equal(never.status, 404);
    assert.ok(never.ms >= 200, `${never.ms} ms`);
  } finally {
    await short.close();
  }
});

Deno.test("startup hold: a request that names no pool is not held (its 4xx at once)", async () => {
  const r = await startTestRouter({ SVC_STARTUP_HOLD_MS: "5000" });
  try {
    const bare = await encode(r, { "content-type": "application/json" });
    // No pool and a model the router's catalog lacks: the 404 (router/routes/model_request.ts).
    assert.equal(bare.status, 404);
    assert.ok(bare.ms < 2000, `${bare.ms} ms`);
  } finally {
    await r.close();
  }
});
