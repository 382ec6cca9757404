/** Cluster cache as a directory and over http, ahead of the hub. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeHub } from "../fake_hub/server.ts";
import { createClusterCacheSource } from "#worker/weights/cluster_cache.ts";
import { createWeightStore } from "#worker/weights/store.ts";
import type { WeightFetchEvent } from "#worker/weights/types.ts";
import { spySource, TINY_FILES, tinyModel, within, withTempDir, writeRepo } from "./helpers.ts";

const REPO = "shared/cached-model";

Deno.test("cluster cache (dir): files are read in place, not copied; the hub is not asked", async () => {
  await withTempDir(async (tmp) => {
    const files = tinyModel(51);
    await writeRepo(join(tmp, "cluster"), REPO, files);
    const hub = spySource("hub");
    const events: WeightFetchEvent[] = [];
    const store = createWeightStore({
      cacheDir: join(tmp, "cache"),
      sources: [createClusterCacheSource({ location: join(tmp, "cluster") }), hub],
      onFetch: (e) => events.push(e),
    });
    const paths = await within(5000, store.ensureFiles(REPO, "main", TINY_FILES));
    for (const [role, path] of Object.entries(TINY_FILES)) {
      assert.ok(paths[role].startsWith(join(tmp, "cluster")));
      assert.deepEqual(await Deno.readFile(paths[role]), files[path]);
    }
    assert.equal(hub.calls.length, 0);
    assert.equal(events.length, Object.keys(TINY_FILES).length, "one fetch event per file");
    assert.ok(events.every((e) => e.source === "cluster-cache" && e.bytes === 0));
    assert.equal(await Deno.stat(join(tmp, "cache")).then(() => true, () => false), false);
  });
});

Deno.test("cluster cache (dir): a file it lacks falls through to the next source", async () => {
  await withTempDir(async (tmp) => {
    await writeRepo(join(tmp, "cluster"), REPO, { "config.json": tinyModel(52)["config.json"] });
    const next = spySource("hub");
    const store = createWeightStore({
      cacheDir: join(tmp, "cache"),
      sources: [createClusterCacheSource({ location: join(tmp, "cluster") }), next],
    });
    await assert.rejects(store.ensureFiles(REPO, "main", TINY_FILES));
    assert.deepEqual(next.calls.map((c) => c.path).sort(), ["onnx/model.onnx", "tokenizer.json"]);
  });
});

Deno.test("cluster cache (http): static files under <base>/<org>/<name>/<path>", async () => {
  await withTempDir(async (tmp) => {
    const files = tinyModel(53);
    await writeRepo(join(tmp, "cluster"), REPO, files);
    const server = await startFakeHub({ root: join(tmp, "cluster") });
    try {
      const hub = spySource("hub");
      const store = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [createClusterCacheSource({ location: server.staticUrl, timeoutMs: 5000 }), hub],
      });
      const paths = await within(10_000, store.ensureFiles(REPO, "main", TINY_FILES));
      for (const [role, path] of Object.entries(TINY_FILES)) {
        assert.deepEqual(await Deno.readFile(paths[role]), files[path]);
      }
      assert.equal(hub.calls.length, 0);
      assert.deepEqual(
        server.requests.map((r) => `${r.method} ${r.path} ${r.status}`).sort(),
        Object.values(TINY_FILES).map((p) => `GET /_static/${REPO}/${p} 200`).sort(),
      );
      // 404 from the http cache means "not here": the next source is asked.
      await assert.rejects(store.ensureFiles(REPO, "main", { x: "absent.bin" }));
      assert.deepEqual(hub.calls.map((c) => c.path), ["absent.bin"]);
    } finally {
      await server.close();
    }
  });
});

Deno.test("cluster cache (http): a file sent without a length is fetched but marked unchecked until replaced", async () => {
  await withTempDir(async (tmp) => {
    const files = tinyModel(54);
    await writeRepo(join(tmp, "cluster"), REPO, files);
    const chunked = await startFakeHub({ root: join(tmp, "cluster"), chunkedStatic: true });
    const sized = await startFakeHub({ root: join(tmp, "cluster") });
    try {
      const cacheDir = join(tmp, "cache");
      const store = createWeightStore({
        cacheDir,
        sources: [createClusterCacheSource({ location: chunked.staticUrl, timeoutMs: 5000 })],
      });
      const paths = await within(10_000, store.ensureFiles(REPO, "main", TINY_FILES));
      for (const [role, path] of Object.entries(TINY_FILES)) {
        assert.deepEqual(await Deno.readFile(paths[role]), files[path]);
      }
      assert.deepEqual(store.unchecked!(REPO, "main", TINY_FILES).sort(), [
        "config.json",
        "onnx/model.onnx",
        "tokenizer.json",
      ]);
      // Moved aside: no longer this store's copy.
      await store.quarantine!(REPO, "main", { model: TINY_FILES.model });
      assert.deepEqual(store.unchecked!(REPO, "main", TINY_FILES).sort(), [
        "config.json",
        "tokenizer.json",
      ]);
      // The same files from a cache that states their length are checked copies.
      const checked = createWeightStore({
        cacheDir: join(tmp, "cache2"),
        sources: [createClusterCacheSource({ location: sized.staticUrl, timeoutMs: 5000 })],
      });
      await within(10_000, checked.ensureFiles(REPO, "main", TINY_FILES));
      assert.deepEqual(checked.unchecked!(REPO, "main", TINY_FILES), []);
    } finally {
      await chunked.close();
      await sized.close();
    }
  });
});

Deno.test("cacheStamp: changes when a file appears in, or is replaced in, the local cache or a cluster cache directory; never fetches", async () => {
  await withTempDir(async (tmp) => {
    const hub = spySource("hub");
    const http = await startFakeHub({ root: join(tmp, "cluster") });
    try {
      const store = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [
          createClusterCacheSource({ location: join(tmp, "cluster") }),
          createClusterCacheSource({ location: http.staticUrl }),
          hub,
        ],
      });
      const stamp = () => store.cacheStamp(REPO, "main", TINY_FILES);
      const empty = await stamp();
      assert.equal(await stamp(), empty, "nothing changed, same stamp");
      await writeRepo(join(tmp, "cluster"), REPO, tinyModel(61));
      const inCluster = await stamp();
      assert.notEqual(inCluster, empty, "files appeared in the cluster cache directory");
      await writeRepo(join(tmp, "cache"), `${REPO}/@main`, {
        "config.json": tinyModel(62)["config.json"],
      });
      const inLocal = await stamp();
      assert.notEqual(inLocal, inCluster, "a file appeared in the local cache");
      // Replaced by an atomic rename, like every download writes it (a new size here).
      const dest = join(tmp, "cache", ...REPO.split("/"), "@main", "config.json");
      await Deno.writeFile(`${dest}.new`, new Uint8Array(3));
      await Deno.rename(`${dest}.new`, dest);
      assert.notEqual(await stamp(), inLocal, "a file was replaced");
      assert.equal(hub.calls.length, 0);
      assert.equal(http.requests.length, 0, "an http cluster cache is not asked");
    } finally {
      await http.close();
    }
  });
});
