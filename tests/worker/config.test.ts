import assert from "node:assert/strict";
import { loadWorkerConfig } from "../../worker/config/config.ts";
import { modelFilter } from "../../worker/catalog/loader.ts";

Deno.test("config: defaults", () => {
  const c = loadWorkerConfig({ HOME: "/home/x" });
  assert.equal(c.SVC_PORT, 8080);
  assert.equal(c.SVC_HOST, "0.0.0.0");
  assert.equal(c.SVC_DEVICE, "auto");
  assert.equal(c.SVC_MEMORY_PRESSURE_THRESHOLD_PERCENT, 85);
  assert.equal(c.SVC_MAX_BATCH_REQUESTS, 64);
  assert.equal(c.SVC_MAX_BATCH_WAIT_MS, 0);
  assert.equal(c.SVC_HUB_URL, "https://huggingface.co");
  assert.equal(c.cacheDir, "/home/x/.cache/svc/models");
});

Deno.test("config: bad values stop start-up naming the variable, never echoing secrets", () => {
  assert.throws(() => loadWorkerConfig({ SVC_PORT: "eighty" }), /SVC_PORT/);
  assert.throws(() => loadWorkerConfig({ SVC_DEVICE: "tpu" }), /SVC_DEVICE/);
  assert.throws(() => loadWorkerConfig({ SVC_MAX_BATCH_REQUESTS: "0" }), /SVC_MAX_BATCH_REQUESTS/);
  assert.throws(
    () => loadWorkerConfig({ SVC_MEMORY_PRESSURE_THRESHOLD_PERCENT: "120" }),
    /SVC_MEMORY_PRESSURE_THRESHOLD_PERCENT/,
  );
  try {
    loadWorkerConfig({ SVC_HUB_URL: "not a url hf_supersecret" });
    assert.fail("should throw");
  } catch (e) {
    assert.match((e as Error).message, /SVC_HUB_URL/);
    assert.ok(!(e as Error).message.includes("hf_supersecret"));
  }
});

Deno.test("config: lists", () => {
  const c = loadWorkerConfig({ SVC_PRELOAD_MODELS: " a/b , c/d,,", SVC_MODEL_FILTER: "x/*" });
  assert.deepEqual(c.SVC_PRELOAD_MODELS, ["a/b", "c/d"]);
  const keep = modelFilter(c.SVC_MODEL_FILTER);
  assert.equal(keep("x/y"), true);
  assert.equal(keep("y/x"), false);
  assert.equal(modelFilter(undefined)("anything/at-all"), true);
});
