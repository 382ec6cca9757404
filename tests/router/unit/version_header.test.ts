/**
 * The router stamps its version under both names on every answer (docs/api.md "Versioning"): ours and
 * `X-SIE-Server-Version`, which the SIE clients read for their version-skew warning.
 */
import assert from "node:assert/strict";
import { VERSION } from "@svc/shared/version";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { startTestRouter, TEST_TOKEN } from "../helpers/router.ts";

Deno.test("version header: both names on proxied, provisioning, error, probe and page answers", async () => {
  const r = await startTestRouter({ SVC_MACHINE_PROFILES: "h100" });
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w",
    profile: "cpu",
    models: [{ name: "fixture/dense" }],
  });
  try {
    await waitFor(() => w.link.connected, "worker to register");
    const post = (path: string, profile: string) =>
      fetch(`${r.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-svc-machine-profile": profile },
        body: "{}",
      });
    const answers: [string, Response][] = [
      ["proxied 200", await post("/v1/encode/fixture/dense", "cpu")],
      ["202 provisioning", await post("/v1/encode/BAAI%2Fbge-small-en-v1.5", "h100")],
      ["404 model", await post("/v1/encode/nobody%2Fknows", "cpu")],
      ["404 route", await fetch(`${r.url}/nope`)],
      ["healthz", await fetch(`${r.url}/healthz`)],
      ["health", await fetch(`${r.url}/health`)],
      ["metrics", await fetch(`${r.url}/metrics`)],
      ["dashboard", await fetch(`${r.url}/`)],
    ];
    const statuses = answers.map(([, res]) => res.status);
    assert.deepEqual(statuses, [200, 202, 404, 404, 200, 200, 200, 200]);
    for (const [what, res] of answers) {
      await res.body?.cancel();
      assert.equal(res.headers.get("x-svc-server-version"), VERSION, what);
      assert.equal(res.headers.get("x-sie-server-version"), VERSION, what);
    }
  } finally {
    await w.close();
    await r.close();
  }
});
