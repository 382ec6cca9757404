/** Gated repositories: clear errors without (or with a wrong) HF_TOKEN, never leaking the token. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeHub } from "../fake_hub/server.ts";
import { createHubSource } from "#worker/weights/hub.ts";
import { createWeightStore } from "#worker/weights/store.ts";
import { ServiceError } from "@svc/shared/errors";
import type { WeightsError } from "#worker/weights/errors.ts";
import { partialFiles, TINY_FILES, tinyModel, within, withTempDir, writeRepo } from "./helpers.ts";

const REPO = "gatedorg/secret-model";
const GOOD = "hf_GoodTokenValue123456789";
const WRONG = "hf_WrongTokenValue987654321";

/** Runs `fn` with a fake hub whose REPO is gated behind GOOD. */
async function withGatedHub(
  fn: (hubUrl: string, cacheDir: string) => Promise<void>,
): Promise<void> {
  await withTempDir(async (tmp) => {
    await writeRepo(join(tmp, "hub"), REPO, tinyModel(3));
    const hub = await startFakeHub({ root: join(tmp, "hub"), gated: { [REPO]: GOOD } });
    try {
      await fn(hub.url, join(tmp, "cache"));
      assert.deepEqual(await partialFiles(join(tmp, "cache")), []);
    } finally {
      await hub.close();
    }
  });
}

async function loadError(hubUrl: string, cacheDir: string, token?: string): Promise<ServiceError> {
  const store = createWeightStore({
    cacheDir,
    sources: [createHubSource({ hubUrl, token, timeoutMs: 5000 })],
  });
  const err = await within(
    10_000,
    store.ensureFiles(REPO, "main", TINY_FILES, { gated: true, modelId: "gatedorg/secret-model" })
      .then(() => undefined, (e: unknown) => e),
  );
  assert.ok(err instanceof ServiceError, `expected a ServiceError, got ${err}`);
  return err;
}

Deno.test("gated: without a token the error names the model, HF_TOKEN and the licence", async () => {
  await withGatedHub(async (hubUrl, cacheDir) => {
    const err = await loadError(hubUrl, cacheDir);
    assert.match(err.message, /gatedorg\/secret-model/);
    assert.match(err.message, /HF_TOKEN/);
    assert.match(err.message, /licen[cs]e/);
    assert.match(err.message, /401/);
    assert.equal(err.code, "INTERNAL_ERROR");
    assert.equal((err as WeightsError).failure, "gated", "a failed load reports error_class gated");
  });
});

Deno.test("gated: a wrong token gives 403 and the message never contains the token", async () => {
  await withGatedHub(async (hubUrl, cacheDir) => {
    const err = await loadError(hubUrl, cacheDir, WRONG);
    assert.match(err.message, /403/);
    assert.match(err.message, /HF_TOKEN/);
    assert.match(err.message, /gatedorg\/secret-model/);
    for (const text of [err.message, JSON.stringify(err.toBody()), String(err.stack)]) {
      assert.ok(!text.includes(WRONG), "token value leaked into the error");
      assert.ok(!text.includes(GOOD));
    }
  });
});

Deno.test("gated: the right token downloads the files", async () => {
  await withGatedHub(async (hubUrl, cacheDir) => {
    const store = createWeightStore({
      cacheDir,
      sources: [createHubSource({ hubUrl, token: GOOD, timeoutMs: 5000 })],
    });
    const paths = await within(
      10_000,
      store.ensureFiles(REPO, "main", TINY_FILES, { gated: true }),
    );
    assert.deepEqual(await Deno.readFile(paths.model), tinyModel(3)["onnx/model.onnx"]);
  });
});

Deno.test("gated: a token not starting with hf_ is still sent (the library would refuse it)", async () => {
  await withTempDir(async (tmp) => {
    await writeRepo(join(tmp, "hub"), REPO, tinyModel(3));
    const token = "org_token_without_prefix";
    const hub = await startFakeHub({ root: join(tmp, "hub"), gated: { [REPO]: token } });
    try {
      const store = createWeightStore({
        cacheDir: join(tmp, "cache"),
        sources: [createHubSource({ hubUrl: hub.url, token, timeoutMs: 5000 })],
      });
      await within(10_000, store.ensureFiles(REPO, "main", { config: "config.json" }));
    } finally {
      await hub.close();
    }
  });
});
