/**
 * What a source offers is checked before a file is committed (issue 16.7): the hub's stated hash
 * (ETag / X-Linked-Etag: git blob id or LFS sha256) must match the bytes, or the file never
 * reaches the cache. A cluster cache directory is read in place, never copied, so a model rebuilt
 * there is never answered from a stale local copy (issue 12).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createWeightStore } from "#worker/weights/store.ts";
import { createHubSource, digestFromEtag } from "#worker/weights/hub.ts";
import { createClusterCacheSource } from "#worker/weights/cluster_cache.ts";
import { startFakeHub } from "../fake_hub/server.ts";
import {
  partialFiles,
  spySource,
  TINY_FILES,
  tinyModel,
  withTempDir,
  writeCached,
  writeRepo,
} from "./helpers.ts";

const REPO = "acme/checked";

Deno.test("digestFromEtag: sha256 for LFS tags, git blob sha1 for small files, else no claim", () => {
  const sha256 = "a".repeat(64);
  assert.deepEqual(digestFromEtag(`"${sha256}"`, 10), { algorithm: "sha256", hex: sha256 });
  assert.deepEqual(digestFromEtag(`W/"${"B".repeat(40)}"`, 7), {
    algorithm: "sha1",
    prefix: "blob 7\0",
    hex: "b".repeat(40),
  });
  assert.equal(digestFromEtag(`"d41d8cd98f00b204e9800998ecf8427e"`, 0), undefined, "an MD5 tag");
  assert.equal(digestFromEtag(undefined, 0), undefined);
});

Deno.test("hub: a body whose bytes do not match the stated hash is never committed", async () => {
  await withTempDir(async (tmp) => {
    const files = tinyModel(91);
    await writeRepo(join(tmp, "hub"), REPO, files);
    const hub = await startFakeHub({ root: join(tmp, "hub") });
    // Same length, one byte changed: only the hash can tell (a proxy or disk flipping a bit).
    const corrupting: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      const ranged = new Headers(init?.headers).has("range");
      if (ranged || res.status !== 200 || !new URL(String(input)).pathname.endsWith("model.onnx")) {
        return res;
      }
      const body = new Uint8Array(await res.arrayBuffer());
      body[0] ^= 0xff;
      return new Response(body, { status: 200, headers: res.headers });
    };
    try {
      const bad = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [createHubSource({ hubUrl: hub.url, fetch: corrupting })],
      });
      await assert.rejects(bad.ensureFiles(REPO, "main", TINY_FILES), /corrupt download: sha1/);
      const dest = join(tmp, "cache", "acme", "checked", "@main", "onnx", "model.onnx");
      assert.equal(await Deno.stat(dest).then(() => true, () => false), false, "not committed");
      assert.deepEqual(await partialFiles(join(tmp, "cache")), []);
      const good = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [createHubSource({ hubUrl: hub.url })],
      });
      const paths = await good.ensureFiles(REPO, "main", TINY_FILES);
      assert.deepEqual(await Deno.readFile(paths.model), files["onnx/model.onnx"]);
    } finally {
      await hub.close();
    }
  });
});

Deno.test("cluster cache directory: served in place, a rebuilt file is seen, a stale local copy is not", async () => {
  await withTempDir(async (tmp) => {
    const cluster = join(tmp, "cluster");
    await writeRepo(cluster, REPO, tinyModel(92));
    // What an older build left in the local cache under the same id and revision.
    await writeCached(join(tmp, "cache"), REPO, "main", tinyModel(93));
    const hub = spySource("hub");
    const store = createWeightStore({
      cacheDir: join(tmp, "cache"),
      sources: [createClusterCacheSource({ location: cluster }), hub],
    });
    const paths = await store.ensureFiles(REPO, "main", TINY_FILES);
    assert.equal(paths.model, join(cluster, "acme", "checked", "onnx", "model.onnx"));
    assert.deepEqual(await Deno.readFile(paths.model), tinyModel(92)["onnx/model.onnx"]);
    // Rebuilt in the cluster directory: the next load reads the new bytes, nothing is copied.
    await writeRepo(cluster, REPO, tinyModel(94));
    const again = await store.ensureFiles(REPO, "main", TINY_FILES);
    assert.deepEqual(await Deno.readFile(again.model), tinyModel(94)["onnx/model.onnx"]);
    assert.equal(hub.calls.length, 0);
    // A file the directory lacks still comes from the next source into the local cache.
    await assert.rejects(store.ensureFiles(REPO, "main", { extra: "missing.bin" }));
    assert.equal(hub.calls.length, 1);
  });
});
