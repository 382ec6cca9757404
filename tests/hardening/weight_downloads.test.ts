/**
 * Issue 23.5 against a worker: weight downloads from an http cluster cache that streams files
 * chunked, with no Content-Length or ETag.
 * - A LoRA adapter far over SVC_MAX_LORA_BYTES was written whole before the bound refused it
 *   (629 MB on disk for a 10 MiB bound); now the download stops at the bound.
 * - A model file the cache sent cut short (ending like a whole file) failed as `incompatible`,
 *   a permanent class: the worker answered 502 for ever after the cache was fixed, until a
 *   restart. The source could not prove the copy complete, so the failure is now `unverified`
 *   (transient): after the cool-down the copy is fetched again and the model loads.
 */
import assert from "node:assert/strict";
import { ensureFixtures } from "@svc/fixture-models";
import { startFakeHub } from "../fake_hub/server.ts";
import { postJson, startTestWorker } from "../worker/harness.ts";
import { partialFiles } from "../weights/helpers.ts";
import { copyDir } from "../helpers/files.ts";
import { waitFor } from "../helpers/wait.ts";

/** Every file under `dir` with its size (paths relative to it). */
async function filesUnder(dir: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const walk = async (d: string, rel: string): Promise<void> => {
    for await (const e of Deno.readDir(d)) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory) await walk(`${d}/${e.name}`, path);
      else out[path] = (await Deno.stat(`${d}/${e.name}`)).size;
    }
  };
  await walk(dir, "").catch(() => {});
  return out;
}

Deno.test("weight downloads: an adapter streamed without a length stops at SVC_MAX_LORA_BYTES", async () => {
  const fx = await ensureFixtures();
  const root = await Deno.makeTempDir({ prefix: "svc-chunked-cache-" });
  const cacheDir = await Deno.makeTempDir({ prefix: "svc-local-cache-" });
  await copyDir(`${fx}/cache/fixture/dense`, `${root}/fixture/dense`);
  // 8 MiB of adapter weights (never parsed: the bound refuses them first) and a config.
  await Deno.mkdir(`${root}/fixture-lora/huge`, { recursive: true });
  await Deno.writeFile(
    `${root}/fixture-lora/huge/adapter_model.safetensors`,
    new Uint8Array(8 << 20),
  );
  await Deno.writeTextFile(
    `${root}/fixture-lora/huge/adapter_config.json`,
    JSON.stringify({ peft_type: "LORA", r: 2, lora_alpha: 4, target_modules: ["query"] }),
  );
  const cache = await startFakeHub({ root, chunkedStatic: true });
  const bound = 1 << 20;
  const w = await startTestWorker({
    SVC_CLUSTER_CACHE: cache.staticUrl,
    SVC_CACHE_DIR: cacheDir,
    SVC_MODEL_FILTER: "fixture/dense",
    SVC_MAX_LORA_BYTES: String(bound),
  });
  try {
    const body = {
      items: [{ text: "hello" }],
      params: { options: { lora_id: "fixture-lora/huge" } },
    };
    // 503 while the adapter downloads; then the answer.
    let r = await postJson(`${w.url}/v1/encode/fixture/dense`, body);
    if (r.status === 503) {
      await waitFor(
        async () => {
          r = await postJson(`${w.url}/v1/encode/fixture/dense`, body);
          return r.status !== 503;
        },
        "the adapter's answer",
        { everyMs: 100 },
      );
    }
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.match(
      r.body.detail.message,
      new RegExp(
        `adapter_model.safetensors is larger than the ${bound} bytes allowed \\(its download ` +
          `was stopped at \\d+ bytes\\) \\(SVC_MAX_LORA_BYTES\\)`,
      ),
    );
    // Nothing of the adapter is left in the local cache: no partial, no file.
    const left = await filesUnder(`${cacheDir}/fixture-lora`);
    assert.deepEqual(
      Object.keys(left).filter((p) => p.includes("safetensors")),
      [],
      JSON.stringify(left),
    );
    assert.deepEqual(await partialFiles(cacheDir), []);
  } finally {
    await w.close();
    await cache.close();
    await Deno.remove(root, { recursive: true });
    await Deno.remove(cacheDir, { recursive: true });
  }
});

Deno.test("weight downloads: a model file cut short by a cache that states no length is retried after the cool-down", async () => {
  const fx = await ensureFixtures();
  const model = `${fx}/cache/fixture/dense/onnx/model.onnx`;
  const size = (await Deno.stat(model)).size;
  const cache = await startFakeHub({ root: `${fx}/cache`, chunkedStatic: true });
  const cacheDir = await Deno.makeTempDir({ prefix: "svc-local-cache-" });
  // The cache is broken for the first load (its copy, and the copy fetched again after the
  // first one was quarantined), then fixed.
  cache.fault("fixture/dense/onnx/model.onnx", "error", size >> 1);
  cache.fault("fixture/dense/onnx/model.onnx", "error", size >> 1);
  const w = await startTestWorker({
    SVC_CLUSTER_CACHE: cache.staticUrl,
    SVC_CACHE_DIR: cacheDir,
    SVC_MODEL_FILTER: "fixture/dense",
    // Long enough that the second request comes within it on a busy machine.
    SVC_LOAD_FAILURE_COOLDOWN_MS: "2000",
  }, { preload: false });
  const encode = () => postJson(`${w.url}/v1/encode/fixture/dense`, { items: [{ text: "hello" }] });
  try {
    const failed = await encode();
    assert.equal(failed.status, 502, JSON.stringify(failed.body));
    assert.equal(failed.body.detail.code, "MODEL_LOAD_FAILED");
    assert.equal(failed.body.detail.error_class, "unverified");
    assert.equal(failed.body.detail.permanent, false);
    assert.match(
      failed.body.detail.message,
      /onnx\/model\.onnx.* came from a source that stated neither size nor hash/,
    );
    // Remembered for the cool-down: answered at once, no new load.
    const again = await encode();
    assert.equal(again.status, 502);
    assert.equal(again.body.detail.attempts, 1);
    // The source is fixed: the first request after the cool-down loads the model, no restart;
    // until then each answer is the remembered one.
    let ok = again;
    await waitFor(
      async () => {
        ok = await encode();
        if (ok.status === 502) assert.equal(ok.body.detail.attempts, 1);
        return ok.status !== 502;
      },
      "a load after the cool-down",
      { everyMs: 50 },
    );
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const local = await Deno.readFile(`${cacheDir}/fixture/dense/@main/onnx/model.onnx`);
    assert.equal(local.length, size);
  } finally {
    await w.close();
    await cache.close();
    await Deno.remove(cacheDir, { recursive: true });
  }
});
