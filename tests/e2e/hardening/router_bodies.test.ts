/**
 * Issue 16.1 and 16.3 on the router, against a real router process over raw sockets: a declared
 * Content-Length is a claim, not an allocation, stalled bodies and headers are answered 408 and
 * their connections closed, bodies share the in-flight budget, and what needs no body (400, 404,
 * 202) is answered before the body has arrived.
 */
import assert from "node:assert/strict";
import { FLEET_TOKEN, startRouterProcess } from "../../observability/helpers/process.ts";
import { startFakeWorker } from "../../router/helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import {
  assertBudgetRefusesThird,
  assertSlowBodiesCheap,
  rawRequest,
  within,
} from "../../hardening/helpers.ts";

const IDLE_MS = 2000;

/** Request line and headers of a POST declaring `length` bytes, then `sent` of them. */
function post(path: string, length: number, sent: string, profile = "cpu"): string {
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `X-SVC-Machine-Profile: ${profile}\r\nContent-Length: ${length}\r\n\r\n${sent}`;
}

/** A router process with `env` and a fake worker of `profile` serving fixture/dense, registered. */
async function routerWithWorker(env: Record<string, string>, profile: string) {
  const r = await startRouterProcess(env);
  const worker = startFakeWorker({
    routerUrl: r.url,
    token: FLEET_TOKEN,
    id: `${profile}-worker`,
    profile,
    models: [{ name: "fixture/dense", state: "loaded" }],
  });
  const close = async () => {
    await worker.close();
    await r.proc.stop();
  };
  try {
    await waitFor(() => worker.link.connected, "the worker to register", 20_000);
  } catch (err) {
    await close();
    throw err;
  }
  return { r, worker, close };
}

Deno.test({
  name: "router bodies: 20 sockets declaring 32 MiB and sending 10 bytes cost < 50 MB and close",
  async fn() {
    // A worker of the pool, so the router has somewhere to send the bodies and must read them.
    const { r, worker, close } = await routerWithWorker({
      SVC_BODY_IDLE_TIMEOUT_MS: String(IDLE_MS),
      SVC_HEADERS_TIMEOUT_MS: String(IDLE_MS),
    }, "cpu");
    try {
      const rss = await assertSlowBodiesCheap(
        r.url,
        r.proc.child.pid,
        "/v1/encode/fixture%2Fdense",
        IDLE_MS,
        "X-SVC-Machine-Profile: cpu\r\n",
      );
      console.log(`router RSS ${rss.before.toFixed(1)} → ${rss.after.toFixed(1)} MB during it`);
      assert.equal(worker.requests.length, 0, "nothing half-read was forwarded");
    } finally {
      await close();
    }
  },
});

Deno.test({
  name: "router bodies: 400, 404 and 202 are answered before the body arrives",
  async fn() {
    // Long idle timeout: an answer that waited for the body would take 20 s.
    const { r, worker, close } = await routerWithWorker({
      SVC_BODY_IDLE_TIMEOUT_MS: "20000",
      SVC_MACHINE_PROFILES: "cpu,l4",
    }, "l4");
    const sockets = [];
    try {
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
        // Answered without the body, and the connection closed instead of draining 32 MiB
        // (the idle timeout, far later, is what a router that waited for the body would show).
        await within(s.closed, 10_000, `an answer for ${path} (${profile})`);
        assert.match(s.received(), want, `${path} (${profile})`);
      }
      assert.match(sockets[4].received(), /"bundle":"default"/);
      assert.equal(worker.requests.length, 0);
    } finally {
      for (const s of sockets) s.socket.destroy();
      await close();
    }
  },
});

Deno.test({
  name: "router bodies: past SVC_MAX_INFLIGHT_BODY_BYTES, bodies get 503 QUEUE_FULL + Retry-After",
  async fn() {
    const { r, close } = await routerWithWorker({
      SVC_MAX_BODY_BYTES: String(1024 * 1024),
      SVC_MAX_INFLIGHT_BODY_BYTES: String(1024 * 1024),
      SVC_BODY_IDLE_TIMEOUT_MS: "20000",
    }, "cpu");
    try {
      await assertBudgetRefusesThird(
        r.url,
        "/v1/encode/fixture%2Fdense",
        "X-SVC-Machine-Profile: cpu\r\n",
      );
    } finally {
      await close();
    }
  },
});
