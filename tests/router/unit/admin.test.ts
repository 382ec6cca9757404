/** The operator drain route: refused on a router without API keys, behind them otherwise. */
import assert from "node:assert/strict";
import { getJson, startTestRouter } from "../helpers/router.ts";

const KEY = "admin-test-key-0123456789";
const DRAIN = "/v1/admin/workers/w-1/drain";

Deno.test("admin: an open router refuses drain (401); with keys, a key is needed and an unknown worker is 404", async () => {
  const open = await startTestRouter();
  try {
    const r = await getJson(`${open.url}${DRAIN}`, { method: "POST" });
    assert.equal(r.status, 401);
    assert.equal(r.body.detail.code, "UNAUTHORIZED");
    assert.match(r.body.detail.message, /SVC_API_KEYS/);
  } finally {
    await open.close();
  }
  const keyed = await startTestRouter({ SVC_API_KEYS: KEY });
  try {
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
