/**
 * The operator drain route: on a router without API keys only from its own machine (loopback,
 * not proxied); behind the keys otherwise.
 */
import assert from "node:assert/strict";
import { getJson, startTestRouter } from "../helpers/router.ts";
import { adminRefusal, isLoopback } from "../../../router/admin_access.ts";
import { SecretSet } from "@svc/shared/http/secrets";

const KEY = "admin-test-key-0123456789";
const DRAIN = "/v1/admin/workers/w-1/drain";

Deno.test("admin: an open router takes drain from loopback, refuses it through a proxy (401); with keys, a key is needed", async () => {
  const open = await startTestRouter();
  try {
    // From this machine: allowed (the worker is unknown, hence 404 rather than 401).
    const local = await getJson(`${open.url}${DRAIN}`, { method: "POST" });
    assert.equal(local.status, 404, JSON.stringify(local.body));
    assert.equal(local.body.detail.code, "NOT_FOUND");
    for (const h of ["x-forwarded-for", "forwarded", "x-real-ip"]) {
      const proxied = await getJson(`${open.url}${DRAIN}`, {
        method: "POST",
        headers: { [h]: h === "forwarded" ? "for=203.0.113.9" : "203.0.113.9" },
      });
      assert.equal(proxied.status, 401, h);
      assert.equal(proxied.body.detail.code, "UNAUTHORIZED");
      assert.match(proxied.body.detail.message, /SVC_API_KEYS/);
      assert.match(proxied.body.detail.message, /own machine/);
    }
  } finally {
    await open.close();
  }
  const keyed = await startTestRouter({ SVC_API_KEYS: KEY });
  try {
    // Loopback is no key: with keys set, every admin call needs one.
    const none = await getJson(`${keyed.url}${DRAIN}`, { method: "POST" });
    assert.equal(none.status, 401);
    const known = await getJson(`${keyed.url}${DRAIN}`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}` },
    });
    assert.equal(known.status, 404, JSON.stringify(known.body));
    assert.equal(known.body.detail.code, "NOT_FOUND");
  } finally {
    await keyed.close();
  }
});

Deno.test("admin: loopback addresses, and the decision for remote and unknown peers", async () => {
  for (const h of ["127.0.0.1", "127.8.0.3", "::1", "[::1]", "::ffff:127.0.0.1"]) {
    assert.ok(isLoopback(h), h);
  }
  for (
    const h of ["10.0.0.7", "0.0.0.0", "::", "::ffff:10.0.0.1", "127.0.0.1.example", undefined]
  ) {
    assert.ok(!isLoopback(h), String(h));
  }
  const none = await SecretSet.create([]);
  const headers = new Headers();
  assert.equal(adminRefusal(none, { headers, remoteHostname: "127.0.0.1" }), undefined);
  assert.equal(adminRefusal(none, { headers, remoteHostname: "10.0.0.7" })?.code, "UNAUTHORIZED");
  // A server that does not say who the peer is gets no exception either.
  assert.equal(adminRefusal(none, { headers, remoteHostname: undefined })?.code, "UNAUTHORIZED");
  const keys = await SecretSet.create([KEY]);
  assert.equal(adminRefusal(keys, { headers, remoteHostname: "10.0.0.7" }), undefined);
});
