/**
 * Issue 16.1 and 16.3 on the router, against a real router process over raw sockets: a declared
 * Content-Length is a claim, not an allocation, stalled bodies and headers are answered 408 and
 * their connections closed, bodies share the in-flight budget, and what needs no body (400, 404,
 * 202) is answered before the body has arrived.
 */
import assert from "node:assert/strict";
import { FLEET_TOKEN, startRouterProcess } from "../observability/helpers/process.ts";
import { startFakeWorker } from "../router/helpers/fake_worker.ts";
import { waitFor } from "../helpers/wait.ts";
import { rawRequest, rssMiB, timeGet, within } from "./helpers.ts";

const IDLE_MS = 2000;

/** Request line and headers of a POST declaring `length` bytes, then `sent` of them. */
function post(path: string, length: number, sent: string, profile = "cpu"): string {
  return `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
    `X-SVC-Machine-Profile: ${profile}\r\nContent-Length: ${length}\r\n\r\n${sent}`;
}

Deno.test({
  name: "router bodies: 20 sockets declaring 32 MiB and sending 10 bytes cost < 50 MB and close",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const r = await startRouterProcess({
      SVC_BODY_IDLE_TIMEOUT_MS: String(IDLE_MS),
      SVC_HEADERS_TIMEOUT_MS: String(IDLE_MS),
    });
    // A worker of the pool, so the router has somewhere to send the bodies and must read them.
    const worker = startFakeWorker({
      routerUrl: r.url,
      token: FLEET_TOKEN,
      id: "body-worker",
      profile: "cpu",
      models: [{ name: "fixture/dense", state: "loaded" }],
    });
    const sockets = [];
    try {
      await waitFor(() => worker.link.connected, "the worker to register", 20_000);
      await timeGet(`${r.url}/healthz`);
      const before = await rssMiB(r.proc.child.pid);
      for (let i = 0; i < 20; i++) {
        sockets.push(rawRequest(r.url, post("/v1/encode/fixture%2Fdense", 33554000, "0123456789")));
      }
      const headless = rawRequest(r.url, "POST /v1/encode/fixture%2Fdense HTTP/1.1\r\nHost: x\r\n");
      await new Promise((res) => setTimeout(res, 500));
      const probes = [];
      for (let i = 0; i < 5; i++) probes.push(await timeGet(`${r.url}/healthz`));
      const after = await rssMiB(r.proc.child.pid);
      console.log(`router RSS ${before.toFixed(1)} → ${after.toFixed(1)} MB during the attack`);
      assert.ok(after - before < 50, `RSS grew ${(after - before).toFixed(1)} MB`);
      for (const p of probes) {
        assert.equal(p.status, 200);
        assert.ok(p.ms < 2000, `/healthz took ${p.ms.toFixed(0)} ms during the attack`);
      }
      const closedAt = await within(
        Promise.all([...sockets, headless].map((s) => s.closed)),
        IDLE_MS + 8000,
        "stalled connections to be closed",
      );
      for (const s of sockets) assert.match(s.received(), /^HTTP\/1\.1 408 /);
      assert.match(sockets[0].received(), /REQUEST_TIMEOUT.*SVC_BODY_IDLE_TIMEOUT_MS/);
      assert.match(headless.received(), /^HTTP\/1\.1 408 /);
      assert.ok(Math.min(...closedAt) >= IDLE_MS * 0.9, "not closed before the timeout");
      assert.equal(worker.requests.length, 0, "nothing half-read was forwarded");
      assert.equal((await timeGet(`${r.url}/healthz`)).status, 200);
    } finally {
      for (const s of sockets) s.socket.destroy();
      await worker.close();
      await r.proc.stop();
    }
  },
});

Deno.test({
  name: "router bodies: 400, 404 and 202 are answered before the body arrives",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    // Long idle timeout: an answer that waited for the body would take 20 s.
    const r = await startRouterProcess({
      SVC_BODY_IDLE_TIMEOUT_MS: "20000",
      SVC_MACHINE_PROFILES: "cpu,l4",
    });
    const worker = startFakeWorker({
      routerUrl: r.url,
      token: FLEET_TOKEN,
      id: "decide-worker",
      profile: "l4",
      models: [{ name: "fixture/dense", state: "loaded" }],
    });
    const sockets = [];
    try {
      await waitFor(() => worker.link.connected, "the worker to register", 20_000);
      const cases: [string, string, RegExp][] = [
        // Unknown profile: 400 from the header.
        ["/v1/encode/fixture%2Fdense", "nope", /^HTTP\/1\.1 400 /],
        // A name that cannot be a model: 404 from the path.
        ["/v1/encode/x%2F..%2Fy", "cpu", /^HTTP\/1\.1 404 /],
        // The l4 pool serves bundle default but not this model: 404.
        ["/v1/encode/acme%2Fnever-seen", "l4", /^HTTP\/1\.1 404 /],
        // The cpu pool is empty: 202, for a known model and for one nobody has named.
        ["/v1/encode/fixture%2Fdense", "cpu", /^HTTP\/1\.1 202 /],
        ["/v1/score/acme%2Fnever-seen", "cpu", /^HTTP\/1\.1 202 /],
      ];
      for (const [path, profile, want] of cases) {
        const s = rawRequest(r.url, post(path, 33554000, "{", profile));
        sockets.push(s);
        const ms = await within(s.closed, 10_000, `an answer for ${path} (${profile})`);
        assert.match(s.received(), want, `${path} (${profile})`);
        // Answered without the body, and the connection closed instead of draining 32 MiB.
        assert.ok(ms < 10_000, `${path} answered after ${ms.toFixed(0)} ms`);
      }
      assert.match(sockets[4].received(), /"bundle":"default"/);
      assert.equal(worker.requests.length, 0);
    } finally {
      for (const s of sockets) s.socket.destroy();
      await worker.close();
      await r.proc.stop();
    }
  },
});

Deno.test({
  name: "router bodies: past SVC_MAX_INFLIGHT_BODY_BYTES, bodies get 503 QUEUE_FULL + Retry-After",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const r = await startRouterProcess({
      SVC_MAX_BODY_BYTES: String(1024 * 1024),
      SVC_MAX_INFLIGHT_BODY_BYTES: String(1024 * 1024),
      SVC_BODY_IDLE_TIMEOUT_MS: "20000",
    });
    const worker = startFakeWorker({
      routerUrl: r.url,
      token: FLEET_TOKEN,
      id: "budget-worker",
      profile: "cpu",
      models: [{ name: "fixture/dense", state: "loaded" }],
    });
    const sockets = [];
    try {
      await waitFor(() => worker.link.connected, "the worker to register", 20_000);
      const part = "x".repeat(400 * 1024);
      for (let i = 0; i < 3; i++) {
        sockets.push(rawRequest(r.url, post("/v1/encode/fixture%2Fdense", 1024 * 1024, part)));
        await new Promise((res) => setTimeout(res, 300));
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
    } finally {
      for (const s of sockets) s.socket.destroy();
      await worker.close();
      await r.proc.stop();
    }
  },
});
