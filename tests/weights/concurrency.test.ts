/** Shared downloads and bounded parallelism. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeHub } from "../fake_hub/server.ts";
import { createHubSource } from "#worker/weights/hub.ts";
import { createWeightStore } from "#worker/weights/store.ts";
import { writeStreamAtomic } from "#worker/weights/atomic_file.ts";
import type { WeightFileRef, WeightSource } from "#worker/weights/types.ts";
import {
  bytes,
  fullGets,
  TINY_FILES,
  tinyModel,
  within,
  withTempDir,
  writeRepo,
} from "./helpers.ts";

const REPO = "acme/busy-model";

Deno.test("concurrency: 20 concurrent ensureFiles download each file exactly once", async () => {
  await withTempDir(async (tmp) => {
    const files = tinyModel(11);
    await writeRepo(join(tmp, "hub"), REPO, files);
    const hub = await startFakeHub({ root: join(tmp, "hub") });
    try {
      const store = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [createHubSource({ hubUrl: hub.url, timeoutMs: 5000 })],
      });
      const results = await within(
        15_000,
        Promise.all(Array.from({ length: 20 }, () => store.ensureFiles(REPO, "main", TINY_FILES))),
      );
      for (const r of results) assert.deepEqual(r, results[0]);
      for (const path of Object.values(TINY_FILES)) {
        assert.equal(fullGets(hub.requests, path), 1, `one download of ${path}`);
        assert.deepEqual(await Deno.readFile(results[0][roleOf(path)]), files[path]);
      }
      // One probe plus one body per file: nothing else reached the hub.
      assert.equal(hub.requests.length, 2 * Object.keys(TINY_FILES).length);
    } finally {
      await hub.close();
    }
  });
});

function roleOf(path: string): string {
  return Object.entries(TINY_FILES).find(([, p]) => p === path)![0];
}

/**
 * A source that counts concurrency; each download takes 30 ms. With `holdUntil`, a download
 * instead waits until that many run at once (or all `total` have started), so the peak is
 * reached whatever the timing.
 */
function slowSource(
  hold?: { holdUntil: number; total: number },
): WeightSource & { active: number; peak: number; calls: number } {
  const waiting: (() => void)[] = [];
  const s = {
    name: "slow",
    active: 0,
    peak: 0,
    calls: 0,
    async fetchTo(ref: WeightFileRef, dest: string, signal?: AbortSignal): Promise<boolean> {
      s.calls++;
      s.active++;
      s.peak = Math.max(s.peak, s.active);
      try {
        if (hold) {
          if (s.active >= hold.holdUntil || s.calls === hold.total) {
            for (const go of waiting.splice(0)) go();
          } else await new Promise<void>((r) => waiting.push(r));
        } else await new Promise((r) => setTimeout(r, 30)); // overlap with a concurrent caller
        const data = bytes(1000, ref.path.length);
        await writeStreamAtomic(dest, ReadableStream.from([data]), { signal });
        return true;
      } finally {
        s.active--;
      }
    },
  };
  return s;
}

Deno.test("concurrency: files of one model are fetched with bounded parallelism", async () => {
  await withTempDir(async (tmp) => {
    const source = slowSource({ holdUntil: 2, total: 7 });
    const store = createWeightStore({ cacheDir: tmp, sources: [source], maxParallel: 2 });
    const files = Object.fromEntries(
      Array.from({ length: 7 }, (_, i) => [`f${i}`, `shard-${i}.bin`]),
    );
    const paths = await within(10_000, store.ensureFiles(REPO, "main", files));
    assert.equal(Object.keys(paths).length, 7);
    assert.equal(source.calls, 7);
    assert.equal(source.peak, 2);
  });
});

Deno.test("concurrency: the same path under two roles is fetched once", async () => {
  await withTempDir(async (tmp) => {
    const source = slowSource();
    const store = createWeightStore({ cacheDir: tmp, sources: [source] });
    const paths = await store.ensureFiles(REPO, "main", { a: "x.bin", b: "x.bin" });
    assert.equal(paths.a, paths.b);
    assert.equal(source.calls, 1);
  });
});
