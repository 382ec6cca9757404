/** `x-request-id` and `X-Trace-ID` (issue 35.4): the rule, and the server's own answers. */
import assert from "node:assert/strict";
import { idHeaders } from "@svc/shared/http/request_id";
import { serveNodeHttp } from "@svc/shared/http/node_server";

Deno.test("request ids: the client's own when well-formed, else the trace id", () => {
  assert.deepEqual(idHeaders("mine-1", undefined, "t-9"), { "x-request-id": "mine-1" });
  assert.deepEqual(idHeaders(undefined, undefined, "t-9"), { "x-request-id": "t-9" });
  assert.deepEqual(idHeaders("a b", undefined, "t-9"), { "x-request-id": "t-9" });
  // An answer without a trace id (an error) gets one: the client's, else a new one.
  assert.deepEqual(idHeaders(undefined, "c-1", undefined), {
    "X-Trace-ID": "c-1",
    "x-request-id": "c-1",
  });
  const fresh = idHeaders("r-2", "bad id!", undefined);
  assert.match(fresh["X-Trace-ID"], /^[0-9a-f]{32}$/);
  assert.equal(fresh["x-request-id"], "r-2");
});

Deno.test("request ids: an answer of the server's own (a handler that failed) carries them", async () => {
  const server = await serveNodeHttp(() => {
    throw new Error("boom");
  }, { hostname: "127.0.0.1", port: 0, headersTimeoutMs: 5000, requestTimeoutMs: 5000 });
  try {
    const res = await fetch(`http://127.0.0.1:${server.addr.port}/x`, {
      headers: { "x-request-id": "mine-3" },
    });
    await res.body?.cancel();
    assert.equal(res.status, 500);
    assert.equal(res.headers.get("x-request-id"), "mine-3");
    assert.match(res.headers.get("x-trace-id") ?? "", /^[0-9a-f]{32}$/);
  } finally {
    await server.shutdown(1000);
  }
});
