/**
 * Decoding cost is bounded, not just size: the router's /v1/embeddings refuses an 8 MB JSON body
 * whose params.options has 500,000 keys from its pre-scan, with the worker's limit (the worker's
 * side, with real processes: tests/e2e/hardening/decode_cost.test.ts).
 */
import assert from "node:assert/strict";
import { startTestRouter } from "../router/helpers/router.ts";
import { manyKeysJson, post } from "./decode_bodies.ts";

Deno.test("decode cost: the router's /v1/embeddings refuses the same body with the same limit", async () => {
  const router = await startTestRouter();
  try {
    const r = await post(`${router.url}/v1/embeddings`, manyKeysJson({ model: "fixture/dense" }));
    assert.equal(r.status, 400);
    assert.equal(r.body.detail.code, "INVALID_INPUT");
    assert.match(r.body.detail.message, /SVC_MAX_OBJECT_KEYS/);
  } finally {
    await router.close();
  }
});
