/**
 * The worker stamps its version under both names on every answer (docs/api.md "Versioning"), probes,
 * metrics and errors included: `X-SIE-Server-Version` is what the SIE clients read for skew. The
 * models run on a fake backend: this is about headers, not outputs.
 */
import assert from "node:assert/strict";
import { VERSION } from "@svc/shared/version";
import { startFakeBackendWorker } from "./harness.ts";

Deno.test("version header: both names on model answers, errors, probes, metrics and the page", async () => {
  const w = await startFakeBackendWorker({}, { preload: false });
  try {
    const encode = (model: string, body: string) =>
      fetch(`${w.url}/v1/encode/${model}`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body,
      });
    const answers: [string, Response][] = [
      ["encode 200", await encode("fixture/dense", '{"items":[{"text":"hi"}]}')],
      ["encode 400", await encode("fixture/dense", '{"items":[]}')],
      ["encode 404", await encode("nobody/knows", '{"items":[{"text":"hi"}]}')],
      ["models", await fetch(`${w.url}/v1/models`)],
      ["healthz", await fetch(`${w.url}/healthz`)],
      ["readyz (503 until preloaded)", await fetch(`${w.url}/readyz`)],
      ["metrics", await fetch(`${w.url}/metrics`)],
      ["unknown route", await fetch(`${w.url}/nope`)],
    ];
    assert.deepEqual(answers.map(([, r]) => r.status), [200, 400, 404, 200, 200, 503, 200, 404]);
    for (const [what, res] of answers) {
      await res.body?.cancel();
      assert.equal(res.headers.get("x-svc-server-version"), VERSION, what);
      assert.equal(res.headers.get("x-sie-server-version"), VERSION, what);
    }
  } finally {
    await w.close();
  }
});
