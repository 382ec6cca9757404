/** Nothing can escape the cache directory: bad repo ids, revisions and paths are rejected. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createWeightStore } from "#worker/weights/store.ts";
import { repoFilePath, repoFileUrl } from "#worker/weights/paths.ts";
import { ServiceError } from "@svc/shared/errors";
import { spySource, withTempDir } from "./helpers.ts";

const BAD_PATHS = [
  "../x",
  "/etc/passwd",
  "a/../../b",
  "a/./b",
  "a//b",
  "",
  "..",
  "a\\..\\b",
  "C:/x",
  "a/b/",
];
const BAD_REPOS = ["..", "../x", "a/..", "./a", "/abs", "a/b/c", "a", "a/b:c", "https://x/y"];

Deno.test("paths: traversal in file paths is rejected before any source is asked", async () => {
  await withTempDir(async (tmp) => {
    const spy = spySource();
    const store = createWeightStore({ cacheDir: join(tmp, "cache"), sources: [spy] });
    for (const path of BAD_PATHS) {
      await assert.rejects(
        store.ensureFiles("acme/model", "main", { model: path }),
        (e: unknown) => e instanceof ServiceError && /invalid weights file path/.test(e.message),
        `path ${JSON.stringify(path)} must be rejected`,
      );
    }
    assert.equal(spy.calls.length, 0);
    // Nothing was created outside (or inside) the cache.
    assert.deepEqual(await Array.fromAsync(Deno.readDir(tmp)), []);
  });
});

Deno.test("paths: unsafe repository ids and revisions are rejected", async () => {
  await withTempDir(async (tmp) => {
    const spy = spySource();
    const store = createWeightStore({ cacheDir: tmp, sources: [spy] });
    for (const repo of BAD_REPOS) {
      await assert.rejects(
        store.ensureFiles(repo, "main", { model: "model.onnx" }),
        ServiceError,
        `repo ${JSON.stringify(repo)} must be rejected`,
      );
    }
    for (const rev of ["..", ".", "a/b", "", "x".repeat(65), "main?x=1"]) {
      await assert.rejects(
        store.ensureFiles("acme/model", rev, { model: "model.onnx" }),
        ServiceError,
        `revision ${JSON.stringify(rev)} must be rejected`,
      );
    }
    assert.equal(spy.calls.length, 0);
  });
});

Deno.test("paths: layout helpers map safe inputs under the base only", () => {
  assert.equal(repoFilePath("/c", "org/name", "onnx/model.onnx"), "/c/org/name/onnx/model.onnx");
  assert.equal(
    repoFileUrl("http://h:1/base/", "org/name", "a b/#1.bin").href,
    "http://h:1/base/org/name/a%20b/%231.bin",
  );
  assert.throws(() => repoFilePath("/c", "org/name", "../../etc/passwd"), ServiceError);
  assert.throws(() => repoFileUrl("http://h/", "..", "x"), ServiceError);
});
