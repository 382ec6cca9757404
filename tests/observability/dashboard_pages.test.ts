/** Both dashboards are self-contained pages (no external assets) fed by their streams. */
import assert from "node:assert/strict";
import { loadRouterSettings } from "@svc/router/settings";
import { startRouter } from "#router/server.ts";
import { silentLogger } from "@svc/shared/log";
import type { ClusterStatus } from "#router/dashboard/mod.ts";
import { startFakeBackendWorker } from "../worker/harness.ts";
import {} from "./helpers/traffic.ts";
import { waitFor } from "../helpers/wait.ts";
import { recordFrames, wsUrl } from "./helpers/ws.ts";
import { assertShape, CLUSTER_STATUS_MESSAGE } from "../compat/client/sie_shapes.ts";

/** The page is one HTML document that loads nothing from anywhere. */
async function assertSelfContained(res: Response, stream: string): Promise<void> {
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/html/);
  assert.match(res.headers.get("content-security-policy") ?? "", /default-src 'none'/);
  const html = await res.text();
  assert.ok(!/\b(src|href)\s*=/i.test(html), "no src/href attributes: nothing external to load");
  assert.ok(!/https?:\/\//i.test(html), "no absolute URLs");
  assert.ok(!/@import|url\(/i.test(html), "no CSS imports");
  assert.ok(html.includes(stream), `fed by ${stream}`);
}

Deno.test("dashboard: the worker page at / is self-contained and stays open while draining", async () => {
  // The page and its drain rule are the HTTP surface's: no model runs.
  const w = await startFakeBackendWorker();
  try {
    await assertSelfContained(await fetch(`${w.url}/`), "/ws/status");
    w.instance.ctx.state.draining = true;
    await assertSelfContained(await fetch(`${w.url}/`), "/ws/status");
  } finally {
    w.instance.ctx.state.draining = false;
    await w.close();
  }
});

Deno.test("dashboard: the router page at / and its /ws/cluster-status stream", async () => {
  const router = await startRouter(
    loadRouterSettings({ SVC_PORT: "0", SVC_HOST: "127.0.0.1" }),
    { log: silentLogger },
  );
  const client = recordFrames(wsUrl(router.url, "/ws/cluster-status"));
  try {
    await assertSelfContained(await fetch(`${router.url}/`), "/ws/cluster-status");
    await client.opened;
    await waitFor(() => client.frames.length > 0, "first fleet frame", 3000);
    const s = JSON.parse(client.frames[0].data) as ClusterStatus;
    assertShape(s, CLUSTER_STATUS_MESSAGE, "/ws/cluster-status");
    assert.equal(s.worker_count, 0);
    assert.deepEqual(s.workers, []);
    assert.deepEqual(s.pools, []);
    assert.equal(s.requests_per_s, 0);
    assert.ok(Math.abs(s.timestamp - Date.now() / 1000) < 5);
    const plain = await fetch(`${router.url}/ws/cluster-status`);
    assert.equal(plain.status, 400);
    await plain.body?.cancel();
  } finally {
    await client.close();
    await router.close();
  }
});
