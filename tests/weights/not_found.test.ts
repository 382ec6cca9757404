/** A file no source has gives a clear MODEL_NOT_FOUND naming the file, model and sources. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeHub } from "../fake_hub/server.ts";
import { createHubSource } from "#worker/weights/hub.ts";
import { createClusterCacheSource } from "#worker/weights/cluster_cache.ts";
import { createWeightStore } from "#worker/weights/store.ts";
import { ServiceError } from "@svc/shared/errors";
import type { WeightsError } from "#worker/weights/errors.ts";
import { tinyModel, within, withTempDir, writeRepo } from "./helpers.ts";

const REPO = "acme/partial-model";

Deno.test("not found: missing in local, cluster (dir and http) and hub → MODEL_NOT_FOUND", async () => {
  await withTempDir(async (tmp) => {
    await writeRepo(join(tmp, "hub"), REPO, tinyModel(41));
    await writeRepo(join(tmp, "cluster"), REPO, tinyModel(41));
    const hub = await startFakeHub({ root: join(tmp, "hub") });
    try {
      const http = { timeoutMs: 5000 };
      const store = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [
          createClusterCacheSource({ location: join(tmp, "cluster"), ...http }),
          createClusterCacheSource({ location: hub.staticUrl, ...http }),
          createHubSource({ hubUrl: hub.url, ...http }),
        ],
      });
      const err = await within(
        10_000,
        store.ensureFiles(REPO, "main", { model: "onnx/missing.onnx" }, { modelId: "acme/pm" }),
      ).then(() => null, (e: unknown) => e);
      assert.ok(err instanceof ServiceError, String(err));
      assert.equal(err.code, "MODEL_NOT_FOUND");
      assert.equal((err as WeightsError).failure, "not_found");
      assert.equal(err.status, 404);
      assert.match(err.message, /onnx\/missing\.onnx/);
      assert.match(err.message, /acme\/pm \(repo acme\/partial-model\)/);
      assert.match(err.message, /local-cache, cluster-cache, cluster-cache, hub/);
    } finally {
      await hub.close();
    }
  });
});

Deno.test("not found: an unknown repository on the hub (with a token) is not found, not an error", async () => {
  await withTempDir(async (tmp) => {
    await Deno.mkdir(join(tmp, "hub"));
    const hub = await startFakeHub({ root: join(tmp, "hub") });
    try {
      const store = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [createHubSource({ hubUrl: hub.url, token: "hf_any", timeoutMs: 5000 })],
      });
      await assert.rejects(
        within(10_000, store.ensureFiles("nobody/nothing", "main", { model: "model.onnx" })),
        (e: unknown) => e instanceof ServiceError && e.code === "MODEL_NOT_FOUND",
      );
    } finally {
      await hub.close();
    }
  });
});
