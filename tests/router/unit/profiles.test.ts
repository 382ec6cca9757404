/**
 * Machine profiles are an allow-list (issue 16.6): a profile is accepted when it is configured
 * (`SVC_MACHINE_PROFILES`, `SVC_DEFAULT_MACHINE_PROFILE`) or is the pool of a registered worker.
 * Before, every made-up profile created demand (eating the webhook's budget, so real demand was
 * never posted) and metric series.
 */
import assert from "node:assert/strict";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, startTestRouter, TEST_TOKEN } from "../helpers/router.ts";

/** A webhook receiver that records what it is sent. */
function webhook(): { url: string; posts: Record<string, unknown>[]; close: () => Promise<void> } {
  const posts: Record<string, unknown>[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    posts.push(await req.json());
    return new Response(null, { status: 204 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    posts,
    close: () => server.shutdown(),
  };
}

const MODEL = "BAAI%2Fbge-small-en-v1.5";

function encode(url: string, headers: Record<string, string>): Promise<Response> {
  return fetch(`${url}/v1/encode/${MODEL}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ items: [{ text: "x" }] }),
  });
}

Deno.test("profiles: made-up profiles are a 400 naming the accepted ones, with no demand", async () => {
  const hook = webhook();
  // Nothing listed: only the default profile (and pools of registered workers) are accepted.
  const r = await startTestRouter({
    SVC_DEFAULT_MACHINE_PROFILE: "t4",
    SVC_PROVISION_WEBHOOK: hook.url,
    SVC_PROVISION_WEBHOOK_INTERVAL_S: "3600",
  });
  try {
    for (let i = 0; i < 40; i++) {
      const res = await encode(r.url, { "x-svc-machine-profile": `made-up-${i}` });
      const body = await res.json();
      assert.equal(res.status, 400);
      assert.equal(body.detail.code, "INVALID_INPUT");
      assert.match(body.detail.message, /unknown machine profile "made-up-\d+"; accepted: t4 /);
    }
    const alias = await encode(r.url, { "x-sie-machine-profile": "made-up-alias" });
    assert.equal(alias.status, 400);
    await alias.body?.cancel();
    // The real demand still gets through: the default pool provisions and is posted.
    const real = await encode(r.url, {});
    assert.equal(real.status, 202);
    await real.body?.cancel();
    await r.close(); // flushes webhook posts in flight
    assert.deepEqual(hook.posts.map((p) => p.machine_profile), ["t4"]);
  } finally {
    await r.close();
    await hook.close();
  }
});

Deno.test("profiles: configured profiles and registered pools are accepted; metrics stay clean", async () => {
  const hook = webhook();
  const r = await startTestRouter({
    SVC_MACHINE_PROFILES: "l4",
    SVC_PROVISION_WEBHOOK: hook.url,
    SVC_PROVISION_WEBHOOK_INTERVAL_S: "3600",
  });
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "a10-1",
    profile: "a10",
    models: [{ name: "BAAI/bge-small-en-v1.5" }],
  });
  try {
    await waitFor(() => w.link.connected, "registration");
    for (let i = 0; i < 30; i++) {
      const bad = await encode(r.url, { "x-svc-machine-profile": `junk-${i}` });
      assert.equal(bad.status, 400);
      assert.match((await bad.json()).detail.message, /accepted: a10, l4/);
    }
    // Configured, no worker: the pool provisions and the webhook hears of it once.
    const p = await encode(r.url, { "x-svc-machine-profile": "L4" });
    assert.equal(p.status, 202);
    await p.body?.cancel();
    // A registered worker's pool: served.
    const ok = await encode(r.url, { "x-sie-machine-profile": "a10" });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    const metrics = await (await fetch(`${r.url}/metrics`)).text();
    assert.doesNotMatch(metrics, /junk-/, "made-up profiles make no metric series");
    assert.match(metrics, /svc_router_pending_demand\{machine_profile="l4",bundle="default"\} 1/);
    const health = (await getJson(`${r.url}/health`)).body;
    assert.deepEqual(
      health.pending_demand.map((d: { machine_profile: string }) => d.machine_profile),
      ["l4"],
    );
    // Once the pool's last worker left, its profile is no longer accepted (not configured).
    await w.close();
    await waitFor(
      async () => (await getJson(`${r.url}/readyz`)).body.healthy_workers === 0,
      "gone",
    );
    const gone = await encode(r.url, { "x-svc-machine-profile": "a10" });
    assert.equal(gone.status, 400);
    await gone.body?.cancel();
    await r.close();
    assert.deepEqual(hook.posts.map((p) => p.machine_profile), ["l4"]);
  } finally {
    await w.close();
    await r.close();
    await hook.close();
  }
});

Deno.test("profiles: without a default, a request with no profile header is a 400 naming the header and SVC_DEFAULT_MACHINE_PROFILE", async () => {
  const r = await startTestRouter();
  try {
    const res = await encode(r.url, {});
    const body = await res.json();
    assert.equal(res.status, 400);
    assert.equal(body.detail.code, "INVALID_INPUT");
    assert.match(body.detail.message, /X-SVC-MACHINE-PROFILE header is required/);
    assert.match(body.detail.message, /SVC_DEFAULT_MACHINE_PROFILE/);
  } finally {
    await r.close();
  }
});
