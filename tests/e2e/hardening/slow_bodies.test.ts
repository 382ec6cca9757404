/**
 * Issue 16.1: a declared Content-Length is a claim, not an allocation, and stalled connections are
 * closed. Against a real worker process over raw sockets.
 */
import assert from "node:assert/strict";
import { startWorkerProcess } from "../../observability/helpers/process.ts";
import { assertBudgetRefusesThird, assertSlowBodiesCheap } from "../../hardening/helpers.ts";

const IDLE_MS = 2000;

Deno.test({
  name: "slow bodies: 20 sockets declaring 32 MiB and sending 10 bytes cost < 50 MB and are closed",
  async fn() {
    const w = await startWorkerProcess({
      SVC_BODY_IDLE_TIMEOUT_MS: String(IDLE_MS),
      SVC_HEADERS_TIMEOUT_MS: String(IDLE_MS),
    });
    try {
      await assertSlowBodiesCheap(w.url, w.proc.child.pid, "/v1/encode/fixture/dense", IDLE_MS);
    } finally {
      await w.proc.stop();
    }
  },
});

Deno.test({
  name: "slow bodies: past SVC_MAX_INFLIGHT_BODY_BYTES, bodies get 503 QUEUE_FULL + Retry-After",
  async fn() {
    const w = await startWorkerProcess({
      SVC_MAX_BODY_BYTES: String(1024 * 1024),
      SVC_MAX_INFLIGHT_BODY_BYTES: String(1024 * 1024),
      SVC_BODY_IDLE_TIMEOUT_MS: "20000",
    });
    try {
      await assertBudgetRefusesThird(w.url, "/v1/encode/fixture/dense", "", async () => {
        // A small request still fits beside the two bodies in flight.
        const res = await fetch(`${w.url}/v1/encode/fixture/dense`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify({ items: [{ text: "hello" }] }),
        });
        await res.body?.cancel();
        assert.equal(res.status, 200);
      });
    } finally {
      await w.proc.stop();
    }
  },
});
