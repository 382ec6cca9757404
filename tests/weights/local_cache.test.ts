/** Local cache hits: no source and no network is touched. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createWeightStore } from "#worker/weights/store.ts";
import type { WeightFetchEvent } from "#worker/weights/types.ts";
import { spySource, TINY_FILES, tinyModel, withTempDir, writeCached } from "./helpers.ts";

const REPO = "acme/local-model";

Deno.test("local cache: a complete cache answers without asking any source", async () => {
  await withTempDir(async (tmp) => {
    const files = tinyModel(61);
    await writeCached(tmp, REPO, "main", files);
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
    assert.equal(paths.model, join(tmp, "acme", "local-model", "@main", "onnx", "model.onnx"));
    assert.deepEqual(await Deno.readFile(paths.tokenizer), files["tokenizer.json"]);
    assert.equal(events.length, 3);
    assert.ok(events.every((e) => e.source === "local-cache" && e.bytes === 0));
    assert.ok(events.every((e) => e.modelId === "acme/local" && e.repo === REPO));
  });
});

Deno.test("local cache: a partial file next to the final path is not a hit", async () => {
  await withTempDir(async (tmp) => {
    await writeCached(tmp, REPO, "main", { "model.onnx.partial-0123abcd": new Uint8Array(10) });
    const spy = spySource("hub");
    const store = createWeightStore({ cacheDir: tmp, sources: [spy] });
    await assert.rejects(store.ensureFiles(REPO, "main", { model: "model.onnx" }));
    assert.equal(spy.calls.length, 1);
  });
});

Deno.test("local cache: a file cached for one revision is never served for another", async () => {
  await withTempDir(async (tmp) => {
    const old = tinyModel(62);
    await writeCached(tmp, REPO, "1111111111111111111111111111111111111111", old);
    const fresh = tinyModel(63);
    const calls: string[] = [];
    const store = createWeightStore({
      cacheDir: tmp,
      sources: [{
        name: "hub",
        async fetchTo(ref, dest) {
          calls.push(`${ref.revision}:${ref.path}`);
          await Deno.writeFile(dest, fresh[ref.path]);
          return true;
        },
      }],
    });
    const rev = "2222222222222222222222222222222222222222";
    const paths = await store.ensureFiles(REPO, rev, TINY_FILES);
    assert.equal(
      calls.length,
      Object.keys(TINY_FILES).length,
      "every file fetched for the new rev",
    );
    assert.ok(calls.every((c) => c.startsWith(`${rev}:`)));
    assert.deepEqual(await Deno.readFile(paths.model), fresh["onnx/model.onnx"]);
    assert.ok(paths.model.includes(`@${rev}`));
    // The old revision is still served from its own folder, without a fetch.
    const before = calls.length;
    const oldPaths = await store.ensureFiles(
      REPO,
      "1111111111111111111111111111111111111111",
      TINY_FILES,
    );
    assert.deepEqual(await Deno.readFile(oldPaths.model), old["onnx/model.onnx"]);
    assert.equal(calls.length, before);
  });
});
