/** Atomic downloads: failures mid-stream or crashes never leave a half file at the final path. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeHub } from "../fake_hub/server.ts";
import { createHubSource } from "#worker/weights/hub.ts";
import { createHttpClusterCache } from "#worker/weights/cluster_cache.ts";
import { createWeightStore } from "#worker/weights/store.ts";
import { writeStreamAtomic } from "#worker/weights/atomic_file.ts";
import { ServiceError } from "@svc/shared/errors";
import type { WeightsError } from "#worker/weights/errors.ts";
import type { WeightFileRef, WeightSource } from "#worker/weights/types.ts";
import {
  bytes,
  fullGets,
  partialFiles,
  spySource,
  tinyModel,
  within,
  withTempDir,
  writeRepo,
} from "./helpers.ts";

const REPO = "acme/fragile";
const MODEL = "onnx/model.onnx";

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

Deno.test("atomic: hub body cut mid-stream leaves no file, the next call succeeds", async () => {
  await withTempDir(async (tmp) => {
    const files = tinyModel(21);
    await writeRepo(join(tmp, "hub"), REPO, files);
    const hub = await startFakeHub({ root: join(tmp, "hub") });
    try {
      const cacheDir = join(tmp, "cache");
      const store = createWeightStore({
        cacheDir,
        sources: [createHubSource({ hubUrl: hub.url, timeoutMs: 5000, idleTimeoutMs: 5000 })],
      });
      const final = join(cacheDir, "acme", "fragile", "@main", "onnx", "model.onnx");
      hub.fault(MODEL, "error", 3000);
      await assert.rejects(
        within(10_000, store.ensureFiles(REPO, "main", { model: MODEL })),
        (e: unknown) => e instanceof ServiceError && e.code === "MODEL_NOT_LOADED",
      );
      assert.equal(await exists(final), false);
      assert.deepEqual(await partialFiles(cacheDir), []);
      const paths = await within(10_000, store.ensureFiles(REPO, "main", { model: MODEL }));
      assert.deepEqual(await Deno.readFile(paths.model), files[MODEL]);
      assert.equal(fullGets(hub.requests, MODEL), 2);
    } finally {
      await hub.close();
    }
  });
});

Deno.test("atomic: http cluster cache cut mid-stream falls through, nothing half-written", async () => {
  await withTempDir(async (tmp) => {
    await writeRepo(join(tmp, "cluster"), REPO, tinyModel(22));
    const hub = await startFakeHub({ root: join(tmp, "cluster") });
    try {
      const cacheDir = join(tmp, "cache");
      const spy = spySource("after");
      const store = createWeightStore({
        cacheDir,
        sources: [createHttpClusterCache({ location: hub.staticUrl, timeoutMs: 5000 }), spy],
      });
      hub.fault(MODEL, "error", 1000);
      const err = await within(10_000, store.ensureFiles(REPO, "main", { model: MODEL }))
        .then(() => null, (e: unknown) => e);
      // The next source was tried; the cluster cache's failure is what gets reported.
      assert.equal(spy.calls.length, 1);
      assert.ok(err instanceof ServiceError && err.code === "MODEL_NOT_LOADED", String(err));
      assert.match(err.message, /cluster-cache/);
      assert.equal((err as WeightsError).failure, "hub_unreachable");
      assert.deepEqual(await partialFiles(cacheDir), []);
      assert.equal(
        await exists(join(cacheDir, "acme", "fragile", "@main", "onnx", "model.onnx")),
        false,
      );
      await within(10_000, store.ensureFiles(REPO, "main", { model: MODEL }));
    } finally {
      await hub.close();
    }
  });
});

/** A source that writes half a file, then "crashes" (throws) the first time. */
function flakySource(): WeightSource & { calls: number } {
  const s = {
    name: "flaky",
    calls: 0,
    async fetchTo(_ref: WeightFileRef, dest: string, signal?: AbortSignal): Promise<boolean> {
      s.calls++;
      const data = bytes(4096, 5);
      const first = s.calls === 1;
      const body = new ReadableStream<Uint8Array>({
        start(ctrl) {
          ctrl.enqueue(data.subarray(0, 2048));
          if (first) ctrl.error(new Error("connection reset"));
          else {
            ctrl.enqueue(data.subarray(2048));
            ctrl.close();
          }
        },
      });
      await writeStreamAtomic(dest, body, { signal });
      return true;
    },
  };
  return s;
}

Deno.test("atomic: a source failing mid-stream leaves no file; the retry succeeds", async () => {
  await withTempDir(async (tmp) => {
    const source = flakySource();
    const store = createWeightStore({ cacheDir: tmp, sources: [source] });
    const final = join(tmp, "acme", "fragile", "w.bin");
    await assert.rejects(store.ensureFiles(REPO, "main", { w: "w.bin" }), /connection reset/);
    assert.equal(await exists(final), false);
    assert.deepEqual(await partialFiles(tmp), []);
    const paths = await store.ensureFiles(REPO, "main", { w: "w.bin" });
    assert.deepEqual(await Deno.readFile(paths.w), bytes(4096, 5));
  });
});

Deno.test("atomic: partials left by a crashed process are ignored, stale ones cleaned", async () => {
  await withTempDir(async (tmp) => {
    const dir = join(tmp, "acme", "fragile", "@main");
    await Deno.mkdir(dir, { recursive: true });
    const stale = join(dir, "w.bin.partial-deadbeef");
    const fresh = join(dir, "other.bin.partial-cafebabe");
    await Deno.writeFile(stale, bytes(100, 1));
    await Deno.writeFile(fresh, bytes(100, 2));
    const old = new Date(Date.now() - 3600_000);
    await Deno.utime(stale, old, old);
    const source = flakySource();
    source.calls = 1; // succeed at once
    const store = createWeightStore({ cacheDir: tmp, sources: [source], stalePartialMs: 60_000 });
    const paths = await store.ensureFiles(REPO, "main", { w: "w.bin" });
    assert.deepEqual(
      await Deno.readFile(paths.w),
      bytes(4096, 5),
      "partial never used as the file",
    );
    assert.equal(await exists(stale), false, "stale partial removed");
    assert.equal(await exists(fresh), true, "a possibly live partial is left alone");
  });
});
