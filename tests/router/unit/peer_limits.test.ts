/**
 * Issue 26.8: per-peer caps for public endpoints (off by default): requests in flight from one
 * address past SVC_MAX_INFLIGHT_PER_PEER get 429 with Retry-After, connections past
 * SVC_MAX_CONNECTIONS_PER_PEER are closed at once; an IPv6 client counts by its /64.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { peerKey, PeerLimits } from "@svc/shared/http/peer_limits";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { startTestRouter, TEST_TOKEN } from "../helpers/router.ts";

Deno.test("peer limits: addresses, /64s and the counts", () => {
  assert.equal(peerKey("203.0.113.9"), "203.0.113.9");
  assert.equal(peerKey("::ffff:203.0.113.9"), "203.0.113.9");
  assert.equal(peerKey("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  assert.equal(peerKey("[2001:db8:1:2:bbbb:cccc:dddd:eeee]"), "2001:db8:1:2::/64");
  assert.equal(peerKey("2001:db8::1"), "2001:db8:0:0::/64");
  const p = new PeerLimits({ maxConnections: 0, maxInflight: 2 });
  const a = p.enter("2001:db8:1:2::1")!;
  const b = p.enter("2001:db8:1:2::2")!;
  assert.equal(p.enter("2001:db8:1:2::3"), undefined, "the same /64");
  assert.ok(p.enter("2001:db8:1:3::1"), "another /64");
  a();
  a(); // released once only
  assert.ok(p.enter("2001:db8:1:2::3"));
  b();
  assert.ok(p.connect("198.51.100.1"), "no connection cap: always");
  assert.equal(new PeerLimits({ maxConnections: 0, maxInflight: 0 }).active, false);
});

Deno.test("peer limits: the router answers 429 past the in-flight cap and closes extra connections", async () => {
  // The worker answers once the test lets go, so the first two are in flight when the third comes.
  let release!: () => void;
  const busy = new Promise<void>((r) => release = r);
  const r = await startTestRouter({
    SVC_MACHINE_PROFILES: "cpu",
    SVC_MAX_INFLIGHT_PER_PEER: "2",
    SVC_MAX_CONNECTIONS_PER_PEER: "4",
  });
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "slow",
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "loaded" }],
    hold: busy,
  });
  const sockets: net.Socket[] = [];
  try {
    await waitFor(() => w.link.connected, "the worker to register");
    // Different bodies: identical requests in flight together would be coalesced into one.
    const encode = (i: number) =>
      fetch(`${r.url}/v1/encode/fixture%2Fdense`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-svc-machine-profile": "cpu" },
        body: JSON.stringify({ i }),
      });
    const pending = [encode(0), encode(1), encode(2)];
    let settled = 0;
    for (const p of pending) p.then(() => settled++, () => settled++);
    const held = () => w.requests.filter((q) => q.path.startsWith("/v1/encode/")).length;
    await waitFor(() => settled === 1 && held() === 2, "two requests held, the third answered");
    release();
    const answers = await Promise.all(pending);
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [200, 200, 429]);
    const refused = answers.find((a) => a.status === 429)!;
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.match(await refused.text(), /SVC_MAX_INFLIGHT_PER_PEER/);
    for (const a of answers) if (a !== refused) await a.body?.cancel();
    // Connections: four held open; the fifth is closed without an answer.
    const { port } = new URL(r.url);
    const open = () =>
      new Promise<net.Socket>((resolve) => {
        const s = net.connect(Number(port), "127.0.0.1", () => resolve(s));
        s.on("error", () => {});
        sockets.push(s);
      });
    for (let i = 0; i < 4; i++) await open();
    await waitFor(async () => {
      const fifth = await open();
      const closed = new Promise<boolean>((res) => {
        const notYet = setTimeout(() => res(false), 500);
        fifth.once("close", () => {
          clearTimeout(notYet);
          res(true);
        });
      });
      fifth.write("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
      return await closed;
    }, "a connection past the cap to be closed");
  } finally {
    release();
    for (const s of sockets) s.destroy();
    await w.close();
    await r.close();
  }
});
