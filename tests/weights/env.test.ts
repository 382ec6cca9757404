/** Weight settings from the environment: defaults, source order, the token never printed. */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  describeWeightSettings,
  type WeightSettings,
  weightSourcesFrom,
  weightStoreFrom,
} from "#worker/weights/settings.ts";
import { loadWorkerSettings } from "@svc/worker/settings";
import { startFakeHub } from "../fake_hub/server.ts";
import { TINY_FILES, tinyModel, within, withTempDir, writeRepo } from "./helpers.ts";

/** The weight slice of the worker's settings for `vars`. */
function readWeightSettings(vars: Record<string, string>): WeightSettings {
  return loadWorkerSettings(vars).weights;
}

Deno.test("env: defaults and overrides", () => {
  const d = readWeightSettings({ HOME: "/home/u" });
  assert.equal(d.cacheDir, "/home/u/.cache/svc/models");
  assert.equal(d.hubUrl, "https://huggingface.co");
  assert.equal(d.clusterCache, undefined);
  assert.equal(d.token, undefined);
  const s = readWeightSettings({
    SVC_CACHE_DIR: "/c",
    SVC_CLUSTER_CACHE: "https://cache.internal/models",
    SVC_HUB_URL: "http://127.0.0.1:9",
    HF_TOKEN: "hf_topsecret",
    SVC_WEIGHTS_HTTP_TIMEOUT_MS: "1500",
    SVC_WEIGHTS_MAX_PARALLEL: "2",
  });
  assert.equal(s.cacheDir, "/c");
  assert.equal(s.timeoutMs, 1500);
  assert.equal(s.maxParallel, 2);
  assert.deepEqual(weightSourcesFrom(s).map((x) => x.name), ["cluster-cache", "hub"]);
  assert.deepEqual(weightSourcesFrom({ ...s, hubDisabled: true }).map((x) => x.name), [
    "cluster-cache",
  ]);
  const line = describeWeightSettings(s);
  assert.match(line, /HF_TOKEN=set/);
  assert.ok(!line.includes("hf_topsecret"));
  assert.throws(() => readWeightSettings({ SVC_WEIGHTS_MAX_PARALLEL: "-1" }));
});

Deno.test("env: a store built from the environment reads through to the hub", async () => {
  await withTempDir(async (tmp) => {
    await writeRepo(join(tmp, "hub"), "acme/env-model", tinyModel(71));
    const hub = await startFakeHub({ root: join(tmp, "hub") });
    try {
      const store = weightStoreFrom(readWeightSettings({
        SVC_CACHE_DIR: join(tmp, "cache"),
        SVC_CLUSTER_CACHE: join(tmp, "no-such-cluster-dir"),
        SVC_HUB_URL: hub.url,
        SVC_WEIGHTS_HTTP_TIMEOUT_MS: "5000",
      }));
      const paths = await within(10_000, store.ensureFiles("acme/env-model", "main", TINY_FILES));
      assert.ok(paths.model.startsWith(join(tmp, "cache")));
    } finally {
      await hub.close();
    }
  });
});
