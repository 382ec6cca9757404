/** Local cache hits: no source and no network is touched. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createWeightStore } from "../../worker/weights/store.ts";
import type { WeightFetchEvent } from "../../worker/weights/types.ts";
import { spySource, TINY_FILES, tinyModel, withTempDir, writeRepo } from "./helpers.ts";

const REPO = "acme/local-model";

Deno.test("local cache: a complete cache answers without asking any source", async () => {
  await withTempDir(async (tmp) => {
    const files = tinyModel(61);
    await writeRepo(tmp, REPO, files);
    const spy = spySource("hub");
    const events: WeightFetchEvent[] = [];
    // Any network call would fail the test: the only source is a spy.
    const store = createWeightStore({
      cacheDir: tmp,
      sources: [spy],
      onFetch: (e) => events.push(e),
    });
    const paths = await store.ensureFiles(REPO, "main", TINY_FILES, { modelId: "acme/local" });
    assert.equal(spy.calls.length, 0);
    assert.equal(paths.model, join(tmp, "acme", "local-model", "onnx", "model.onnx"));
    assert.deepEqual(await Deno.readFile(paths.tokenizer), files["tokenizer.json"]);
    assert.equal(events.length, 3);
    assert.ok(events.every((e) => e.source === "local-cache" && e.bytes === 0));
    assert.ok(events.every((e) => e.modelId === "acme/local" && e.repo === REPO));
  });
});

Deno.test("local cache: a partial file next to the final path is not a hit", async () => {
  await withTempDir(async (tmp) => {
    await writeRepo(tmp, REPO, { "model.onnx.partial-0123abcd": new Uint8Array(10) });
    const spy = spySource("hub");
    const store = createWeightStore({ cacheDir: tmp, sources: [spy] });
    await assert.rejects(store.ensureFiles(REPO, "main", { model: "model.onnx" }));
    assert.equal(spy.calls.length, 1);
  });
});

Deno.test("local cache: a cluster cache directory works as the local cache", async () => {
  await withTempDir(async (tmp) => {
    await writeRepo(join(tmp, "cluster"), REPO, tinyModel(62));
    const spy = spySource("hub");
    const store = createWeightStore({ cacheDir: join(tmp, "cluster"), sources: [spy] });
    const paths = await store.ensureFiles(REPO, "main", TINY_FILES);
    assert.equal(paths.config, join(tmp, "cluster", "acme", "local-model", "config.json"));
    assert.equal(spy.calls.length, 0);
  });
});
