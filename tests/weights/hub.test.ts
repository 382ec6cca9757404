/** Hub source through @huggingface/hub against the fake hub: download, cache reuse, redirects. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeHub } from "../fake_hub/server.ts";
import { createHubSource } from "#worker/weights/hub.ts";
import { createWeightStore } from "#worker/weights/store.ts";
import type { WeightFetchEvent } from "#worker/weights/types.ts";
import {
  bytes,
  fullGets,
  partialFiles,
  TINY_FILES,
  tinyModel,
  within,
  withTempDir,
  writeRepo,
} from "./helpers.ts";

const REPO = "acme/tiny-embed";

Deno.test("hub: downloads every file, then serves the second load from the local cache", async () => {
  await withTempDir(async (tmp) => {
    const files = tinyModel(7);
    await writeRepo(join(tmp, "hub"), REPO, files);
    const hub = await startFakeHub({ root: join(tmp, "hub") });
    try {
      const events: WeightFetchEvent[] = [];
      const store = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [createHubSource({ hubUrl: hub.url, timeoutMs: 5000, idleTimeoutMs: 5000 })],
        onFetch: (e) => events.push(e),
      });
      const paths = await within(10_000, store.ensureFiles(REPO, "main", TINY_FILES));
      for (const [role, path] of Object.entries(TINY_FILES)) {
        assert.equal(
          paths[role],
          join(tmp, "cache", "acme", "tiny-embed", "@main", ...path.split("/")),
        );
        assert.deepEqual(await Deno.readFile(paths[role]), files[path]);
        assert.equal(fullGets(hub.requests, path), 1);
      }
      assert.deepEqual(
        events.map((e) => [e.path, e.source, e.bytes]).sort(),
        Object.values(TINY_FILES).map((p) => [p, "hub", files[p].byteLength]).sort(),
      );
      const before = hub.requests.length;
      const again = await within(10_000, store.ensureFiles(REPO, "main", TINY_FILES));
      assert.deepEqual(again, paths);
      assert.equal(hub.requests.length, before, "second load must not touch the hub");
      assert.deepEqual(await partialFiles(join(tmp, "cache")), []);
    } finally {
      await hub.close();
    }
  });
});

Deno.test("hub: follows the hub's 302 to a signed CDN URL (LFS-style)", async () => {
  await withTempDir(async (tmp) => {
    const files = tinyModel(8);
    await writeRepo(join(tmp, "hub"), REPO, files);
    const hub = await startFakeHub({ root: join(tmp, "hub"), redirect: true });
    try {
      const store = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [createHubSource({ hubUrl: hub.url, timeoutMs: 5000 })],
      });
      const paths = await within(
        10_000,
        store.ensureFiles(REPO, "main", { model: "onnx/model.onnx" }),
      );
      assert.deepEqual(await Deno.readFile(paths.model), files["onnx/model.onnx"]);
      assert.ok(hub.requests.some((r) => r.path.startsWith("/_cdn/") && r.status === 200));
      assert.ok(hub.requests.some((r) => r.path.includes("/resolve/main/") && r.status === 302));
    } finally {
      await hub.close();
    }
  });
});

Deno.test("hub: a pinned revision is requested as such", async () => {
  await withTempDir(async (tmp) => {
    await writeRepo(join(tmp, "hub"), REPO, tinyModel(9));
    const hub = await startFakeHub({ root: join(tmp, "hub") });
    try {
      const commit = hub.commitOf(REPO);
      const store = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [createHubSource({ hubUrl: hub.url, timeoutMs: 5000 })],
      });
      await within(10_000, store.ensureFiles(REPO, commit, { config: "config.json" }));
      assert.ok(hub.requests.length > 0, "the hub was asked");
      assert.ok(hub.requests.every((r) => r.path === `/${REPO}/resolve/${commit}/config.json`));
    } finally {
      await hub.close();
    }
  });
});

Deno.test("hub: a file spanning many chunks arrives intact", async () => {
  await withTempDir(async (tmp) => {
    const big = bytes(300_000, 99);
    await writeRepo(join(tmp, "hub"), REPO, { "model.onnx_data": big });
    const hub = await startFakeHub({ root: join(tmp, "hub") });
    try {
      const store = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [createHubSource({ hubUrl: hub.url, timeoutMs: 5000 })],
      });
      const paths = await within(
        10_000,
        store.ensureFiles(REPO, "main", { data: "model.onnx_data" }),
      );
      assert.deepEqual(await Deno.readFile(paths.data), big);
    } finally {
      await hub.close();
    }
  });
});
