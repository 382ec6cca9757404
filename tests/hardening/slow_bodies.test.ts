/**
 * Issue 16.1: a declared Content-Length is a claim, not an allocation, and stalled connections are
 * closed. Against a real worker process over raw sockets.
 */
import assert from "node:assert/strict";
import { startWorkerProcess } from "../observability/helpers/process.ts";
import { rawRequest, rssMiB, timeGet, within } from "./helpers.ts";

const IDLE_MS = 2000;

Deno.test({
  name: "slow bodies: 20 sockets declaring 32 MiB and sending 10 bytes cost < 50 MB and are closed",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const w = await startWorkerProcess({
      SVC_BODY_IDLE_TIMEOUT_MS: String(IDLE_MS),
      SVC_HEADERS_TIMEOUT_MS: String(IDLE_MS),
    });
    const sockets = [];
    try {
      // Warm the probe path first so its latency below is about the attack, not the first call.
      await timeGet(`${w.url}/healthz`);
      const before = await rssMiB(w.proc.child.pid);
      for (let i = 0; i < 20; i++) {
        sockets.push(rawRequest(
          w.url,
          "POST /v1/encode/fixture/dense HTTP/1.1\r\nHost: x\r\n" +
            "Content-Type: application/json\r\nContent-Length: 33554000\r\n\r\n0123456789",
        ));
      }
      // A connection that never finishes its headers.
      const headless = rawRequest(w.url, "POST /v1/encode/fixture/dense HTTP/1.1\r\nHost: x\r\n");
      await new Promise((r) => setTimeout(r, 500));
      const probes = [];
      for (let i = 0; i < 5; i++) probes.push(await timeGet(`${w.url}/healthz`));
      const after = await rssMiB(w.proc.child.pid);
      assert.ok(
        after - before < 50,
        `RSS grew ${(after - before).toFixed(1)} MB (${before} → ${after})`,
      );
      for (const p of probes) {
        assert.equal(p.status, 200);
        assert.ok(p.ms < 2000, `/healthz took ${p.ms.toFixed(0)} ms during the attack`);
      }
      // Every stalled body is answered 408 and its connection closed within the idle timeout
      // (plus a generous margin for a loaded machine); so is the stalled header block.
      const closedAt = await within(
        Promise.all([...sockets, headless].map((s) => s.closed)),
        IDLE_MS + 8000,
        "stalled connections to be closed",
      );
      for (const s of sockets) assert.match(s.received(), /^HTTP\/1\.1 408 /);
      assert.match(headless.received(), /^HTTP\/1\.1 408 /);
      assert.ok(Math.min(...closedAt) >= IDLE_MS * 0.9, "not closed before the timeout");
      const body = sockets[0].received().split("\r\n\r\n")[1];
      assert.match(body, /REQUEST_TIMEOUT.*SVC_BODY_IDLE_TIMEOUT_MS/);
      // Still serving.
      assert.equal((await timeGet(`${w.url}/healthz`)).status, 200);
    } finally {
      for (const s of sockets) s.socket.destroy();
      await w.proc.stop();
    }
  },
});

Deno.test({
  name: "slow bodies: past SVC_MAX_INFLIGHT_BODY_BYTES, bodies get 503 QUEUE_FULL + Retry-After",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const w = await startWorkerProcess({
      SVC_MAX_BODY_BYTES: String(1024 * 1024),
      SVC_MAX_INFLIGHT_BODY_BYTES: String(1024 * 1024),
      SVC_BODY_IDLE_TIMEOUT_MS: "20000",
    });
    const sockets = [];
    try {
      // Three clients each send 400 KB of a declared 1 MB and pause: the third cannot fit.
      const part = "x".repeat(400 * 1024);
      for (let i = 0; i < 3; i++) {
        sockets.push(rawRequest(
          w.url,
          "POST /v1/encode/fixture/dense HTTP/1.1\r\nHost: x\r\n" +
            `Content-Type: application/json\r\nContent-Length: ${1024 * 1024}\r\n\r\n${part}`,
        ));
        await new Promise((r) => setTimeout(r, 300));
      }
      const refused = await within(
        Promise.race(sockets.map((s, i) => s.closed.then(() => i))),
        10_000,
        "one body to be refused",
      );
      const answer = sockets[refused].received();
      assert.match(answer, /^HTTP\/1\.1 503 /);
      assert.match(answer, /retry-after: 1/i);
      assert.match(answer, /QUEUE_FULL.*SVC_MAX_INFLIGHT_BODY_BYTES/);
      // A small request still fits beside the two bodies in flight.
      const res = await fetch(`${w.url}/v1/encode/fixture/dense`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ items: [{ text: "hello" }] }),
      });
      await res.body?.cancel();
      assert.equal(res.status, 200);
    } finally {
      for (const s of sockets) s.socket.destroy();
      await w.proc.stop();
    }
  },
});
