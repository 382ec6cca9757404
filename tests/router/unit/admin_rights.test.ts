/**
 * Issue 26.2: a client key is not an admin key. Admin actions (drain) and fleet detail (worker
 * ids and URLs in /health, /metrics, /ws/cluster-status) need SVC_ADMIN_KEYS; a client key gets
 * 403; clients still get the capacity summary the SIE clients read; and without admin keys only a
 * local stack (router on loopback, asked from this machine) grants admin rights.
 */
import assert from "node:assert/strict";
import { SecretSet } from "@svc/shared/http/secrets";
import {
  type AccessPolicy,
  accessRequestOf,
  adminRights,
  clientRights,
} from "#router/auth/access.ts";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, startTestRouter, TEST_TOKEN } from "../helpers/router.ts";

const CLIENT = "client-key-for-admin-tests";
const ADMIN = "admin-key-for-admin-tests-0000";
const DRAIN = (id: string) => `/v1/admin/workers/${id}/drain`;

function bearer(key?: string): Record<string, string> {
  return key ? { authorization: `Bearer ${key}` } : {};
}

Deno.test("admin rights: a client key cannot drain; clients see the summary, admins the fleet", async () => {
  const r = await startTestRouter({ SVC_API_KEYS: CLIENT, SVC_ADMIN_KEYS: ADMIN });
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "gpu-1",
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "loaded" }],
  });
  try {
    await waitFor(() => w.link.connected, "the worker to register");
    // Drain: no key 401, a client key 403, an admin key drains.
    assert.equal((await getJson(`${r.url}${DRAIN("gpu-1")}`, { method: "POST" })).status, 401);
    const client = await getJson(`${r.url}${DRAIN("gpu-1")}`, {
      method: "POST",
      headers: bearer(CLIENT),
    });
    assert.equal(client.status, 403);
    assert.equal(client.body.detail.code, "FORBIDDEN");
    assert.match(client.body.detail.message, /SVC_ADMIN_KEYS/);
    assert.equal(r.directory.snapshot()[0].draining, false, "the client key drained nothing");
    // A client's request is served and names no worker.
    const enc = await fetch(`${r.url}/v1/encode/fixture%2Fdense`, {
      method: "POST",
      headers: {
        ...bearer(CLIENT),
        "content-type": "application/json",
        "x-svc-machine-profile": "cpu",
      },
      body: "{}",
    });
    assert.equal(enc.status, 200);
    assert.equal(enc.headers.get("x-svc-worker-id"), null);
    await enc.body?.cancel();
    // /health: the summary for a client key (capacity, no ids or URLs), in full for an admin.
    const summary = await getJson(`${r.url}/health`, { headers: bearer(CLIENT) });
    assert.equal(summary.status, 200);
    assert.equal(summary.body.view, "summary");
    assert.equal(summary.body.type, "gateway");
    const { worker_count, gpu_count, models_loaded } = summary.body.cluster;
    assert.deepEqual([worker_count, gpu_count, models_loaded], [1, 0, 1]);
    assert.deepEqual(summary.body.live_gpu_types, ["cpu"]);
    assert.ok(Array.isArray(summary.body.configured_gpu_types));
    assert.equal(summary.body.workers.length, 1);
    assert.equal(summary.body.workers[0].state, "serving");
    assert.equal(summary.body.workers[0].machine_profile, "cpu");
    const text = JSON.stringify(summary.body);
    assert.ok(!text.includes("gpu-1") && !text.includes(w.url), "no worker id or URL");
    assert.equal(summary.body.router_id, undefined);
    assert.equal(summary.body.pending_demand, undefined);
    const full = await getJson(`${r.url}/health`, { headers: bearer(ADMIN) });
    assert.deepEqual(full.body.workers.map((x: { id: string; url: string }) => [x.id, x.url]), [
      ["gpu-1", w.url],
    ]);
    // Pools: a client sees its workers counted and typed, an admin named and located.
    const pool = await getJson(`${r.url}/v1/pools/cpu`, { headers: bearer(CLIENT) });
    assert.equal(pool.status, 200);
    assert.equal(pool.body.worker_count, 1);
    assert.deepEqual(pool.body.status.assigned_workers, [{
      name: "worker-1",
      url: "",
      gpu: "cpu",
    }]);
    const pools = JSON.stringify(
      (await getJson(`${r.url}/v1/pools`, { headers: bearer(CLIENT) })).body,
    );
    assert.ok(!pools.includes("gpu-1") && !pools.includes(w.url), "no worker id or URL in pools");
    const adminPool = await getJson(`${r.url}/v1/pools/cpu`, { headers: bearer(ADMIN) });
    assert.deepEqual(adminPool.body.status.assigned_workers, [
      { name: "gpu-1", url: w.url, gpu: "cpu" },
    ]);
    for (const path of ["/metrics", "/ws/cluster-status"]) {
      const res = await fetch(`${r.url}${path}`, { headers: bearer(CLIENT) });
      assert.equal(res.status, 403, path);
      await res.body?.cancel();
    }
    const drained = await getJson(`${r.url}${DRAIN("gpu-1")}`, {
      method: "POST",
      headers: bearer(ADMIN),
    });
    assert.equal(drained.status, 200, JSON.stringify(drained.body));
    assert.equal(drained.body.state, "draining");
    assert.equal(r.directory.snapshot()[0].draining, true);
    const unknown = await getJson(`${r.url}${DRAIN("nobody")}`, {
      method: "POST",
      headers: bearer(ADMIN),
    });
    assert.equal(unknown.status, 404);
  } finally {
    await w.close();
    await r.close();
  }
});

Deno.test("admin rights: without admin keys, only a local stack asked from its machine", async () => {
  const policy = async (o: Partial<AccessPolicy> = {}): Promise<AccessPolicy> => ({
    apiKeys: await SecretSet.create([]),
    adminKeys: await SecretSet.create([]),
    localStack: true,
    statusPublic: false,
    ...o,
  });
  const req = (peer: string, headers: Record<string, string> = {}) =>
    accessRequestOf(new Request("http://127.0.0.1/x", { headers }), peer);
  const local = await policy();
  for (const peer of ["127.0.0.1", "::1", "::ffff:127.0.0.1"]) {
    assert.ok((await adminRights(local, req(peer))).ok, peer);
  }
  assert.ok(!(await adminRights(local, req("10.0.0.7"))).ok, "a remote peer");
  assert.ok(
    !(await adminRights(local, req("127.0.0.1", { "x-forwarded-for": "203.0.113.5" }))).ok,
    "a request relayed by a proxy on this machine",
  );
  const exposed = await policy({ localStack: false });
  const refused = await adminRights(exposed, req("127.0.0.1"));
  assert.ok(!refused.ok && refused.error.code === "FORBIDDEN");
  assert.match(!refused.ok ? refused.error.message : "", /SVC_ADMIN_KEYS/);
  // With client keys only, a local stack still grants admin to its own machine, and a client
  // key works for the API; with admin keys set, the loopback rule no longer applies.
  const clientOnly = await policy({ apiKeys: await SecretSet.create([CLIENT]) });
  assert.ok((await adminRights(clientOnly, req("127.0.0.1"))).ok);
  assert.ok(!(await clientRights(clientOnly, req("127.0.0.1"))).ok, "the API needs a key");
  const keyed = await policy({ adminKeys: await SecretSet.create([ADMIN]) });
  assert.ok(!(await adminRights(keyed, req("127.0.0.1"))).ok);
  assert.ok((await adminRights(keyed, req("10.0.0.7", bearer(ADMIN)))).ok);
  assert.ok((await clientRights(keyed, req("10.0.0.7", bearer(ADMIN)))).ok, "admins are clients");
  // In-process: a router on loopback without keys drains for a client on this machine.
  const r = await startTestRouter();
  try {
    const res = await getJson(`${r.url}${DRAIN("nobody")}`, { method: "POST" });
    assert.equal(res.status, 404, "allowed, and the worker is unknown");
    const relayed = await getJson(`${r.url}${DRAIN("nobody")}`, {
      method: "POST",
      headers: { "x-forwarded-for": "203.0.113.5" },
    });
    assert.equal(relayed.status, 403);
  } finally {
    await r.close();
  }
});

Deno.test("admin rights: which peers are this machine, and every proxy header refuses", async () => {
  const local: AccessPolicy = {
    apiKeys: await SecretSet.create([]),
    adminKeys: await SecretSet.create([]),
    localStack: true,
    statusPublic: false,
  };
  const req = (peer: string | undefined, headers: Record<string, string> = {}) =>
    accessRequestOf(new Request("http://127.0.0.1/x", { headers }), peer);
  for (const peer of ["127.8.0.3", "[::1]"]) {
    assert.ok((await adminRights(local, req(peer))).ok, peer);
  }
  // Not loopback, or a server that does not say who the peer is: no exception either.
  for (const peer of ["0.0.0.0", "::", "::ffff:10.0.0.1", "127.0.0.1.example", undefined]) {
    const v = await adminRights(local, req(peer));
    assert.ok(!v.ok && v.error.code === "FORBIDDEN", String(peer));
  }
  // Through a reverse proxy on this machine the peer is loopback, but the client is not.
  const r = await startTestRouter();
  try {
    for (const h of ["x-forwarded-for", "forwarded", "x-real-ip"]) {
      const proxied = await getJson(`${r.url}${DRAIN("nobody")}`, {
        method: "POST",
        headers: { [h]: h === "forwarded" ? "for=203.0.113.9" : "203.0.113.9" },
      });
      assert.equal(proxied.status, 403, h);
      assert.equal(proxied.body.detail.code, "FORBIDDEN");
      assert.match(proxied.body.detail.message, /SVC_ADMIN_KEYS/);
    }
  } finally {
    await r.close();
  }
  // Client keys alone on a local stack: the API needs one, and one is enough to drain from this
  // machine (`deno task drain` passes the first of SVC_API_KEYS); no key is a 401.
  const keyed = await startTestRouter({ SVC_API_KEYS: CLIENT });
  try {
    const none = await getJson(`${keyed.url}${DRAIN("nobody")}`, { method: "POST" });
    assert.equal(none.status, 401);
    const known = await getJson(`${keyed.url}${DRAIN("nobody")}`, {
      method: "POST",
      headers: bearer(CLIENT),
    });
    assert.equal(known.status, 404, JSON.stringify(known.body));
    assert.equal(known.body.detail.code, "NOT_FOUND");
  } finally {
    await keyed.close();
  }
});
