/**
 * A model whose weights are on no disk of the worker is not shown as plainly "available": the
 * status stream says `weights: "not_cached"` with what would fetch them (nothing, with the hub
 * disabled; the hub, which a failed load found unreachable). Models read from a cluster cache
 * directory are on disk.
 */
import assert from "node:assert/strict";
import { startFakeBackendWorker, startTestWorker } from "../worker/harness.ts";
import { waitFor } from "../helpers/wait.ts";
import type { WorkerModelStatus } from "#worker/status/message.ts";
import { WeightSourcesState } from "#worker/weights/sources_state.ts";

const BUILTIN = "BAAI/bge-small-en-v1.5";

async function models(w: Awaited<ReturnType<typeof startTestWorker>>) {
  const m = await w.instance.status.snapshot();
  return new Map(m.models.map((x: WorkerModelStatus) => [x.name, x]));
}

Deno.test("weights presence: with the hub disabled, a model not on disk is not cached and says why", async () => {
  const w = await startFakeBackendWorker({
    SVC_MODEL_FILTER: `fixture/dense,${BUILTIN}`,
    SVC_HUB_DISABLED: "1",
  });
  try {
    await waitFor(async () => (await models(w)).get(BUILTIN)?.weights === "not_cached", "checked");
    const m = await models(w);
    assert.match(m.get(BUILTIN)!.weights_reason!, /nothing can fetch them: SVC_HUB_DISABLED=1/);
    assert.equal(m.get(BUILTIN)!.state, "available", "the stream keeps its four states");
    // The fixture's weights are in the cluster cache directory: on disk.
    assert.equal(m.get("fixture/dense")!.weights, undefined);
  } finally {
    await w.close();
  }
});

Deno.test("weights presence: with a hub that cannot be reached, the reason says so after a load tried it", async () => {
  const w = await startFakeBackendWorker({
    SVC_MODEL_FILTER: `fixture/dense,fixture/sparse,${BUILTIN}`,
    SVC_HUB_DISABLED: "",
    SVC_HUB_URL: "http://127.0.0.1:9",
    // The fixtures come from the hub too here: nothing is on disk.
    SVC_CLUSTER_CACHE: "",
  });
  try {
    await waitFor(async () => (await models(w)).get(BUILTIN)?.weights === "not_cached", "checked");
    assert.match(
      (await models(w)).get(BUILTIN)!.weights_reason!,
      /the hub \(http:\/\/127\.0\.0\.1:9\) on its first request/,
    );
    const res = await fetch(`${w.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ items: [{ text: "x" }] }),
    });
    assert.equal(res.status, 502);
    await res.body?.cancel();
    const after = await models(w);
    assert.match(
      after.get("fixture/sparse")!.weights_reason!,
      /was unreachable at \d\d:\d\d:\d\d UTC/,
    );
  } finally {
    await w.close();
  }
});

Deno.test("weights presence: an http cluster cache is named by scheme and host only (its URL may carry credentials)", () => {
  const state = new WeightSourcesState({
    hubDisabled: true,
    hubUrl: "https://huggingface.co",
    clusterCache: "https://reader:s3cret-pass@cache.internal:8443/models?sig=abc123",
  });
  const reason = state.reason();
  assert.match(reason, /the cluster cache \(https:\/\/cache\.internal:8443\)/);
  for (const secret of ["reader", "s3cret-pass", "sig=abc123", "/models"]) {
    assert.ok(!reason.includes(secret), `${secret} in: ${reason}`);
  }
});
