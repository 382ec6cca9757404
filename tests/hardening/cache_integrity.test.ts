/**
 * Issue 16.7: a weight file cut short in the local cache no longer fails every load until someone
 * deletes it by hand. A load that fails on files the store did have moves the local copies aside
 * (`<cache>/.quarantine/...`) and fetches them again from the sources, once.
 */
import assert from "node:assert/strict";
import { ensureFixtures } from "@svc/fixture-models";
import { startFakeHub } from "../fake_hub/server.ts";
import { startTestWorker } from "../worker/harness.ts";
import { copyDir } from "../helpers/files.ts";

Deno.test("cache integrity: a truncated model file in the local cache is quarantined and fetched again", async () => {
  const fx = await ensureFixtures();
  const cacheDir = await Deno.makeTempDir({ prefix: "svc-integrity-" });
  const local = `${cacheDir}/fixture/dense/@main`;
  await copyDir(`${fx}/cache/fixture/dense`, local);
  const good = await Deno.readFile(`${local}/onnx/model.onnx`);
  // What a crash or a full disk leaves behind: the first part of the file.
  await Deno.writeFile(`${local}/onnx/model.onnx`, good.subarray(0, good.length >> 1));
  // An http cluster cache is copied into the local cache (a directory one is read in place).
  const hub = await startFakeHub({ root: `${fx}/cache` });
  const w = await startTestWorker({
    SVC_CACHE_DIR: cacheDir,
    SVC_CLUSTER_CACHE: hub.staticUrl,
    SVC_MODEL_FILTER: "fixture/dense",
  }, { preload: false });
  try {
    const res = await fetch(`${w.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ items: [{ text: "hello" }] }),
    });
    const body = await res.text();
    assert.equal(res.status, 200, body);
    // The cut copy was moved aside and a whole one fetched from the cluster cache.
    const fetched = await Deno.readFile(`${local}/onnx/model.onnx`);
    assert.ok(fetched.length === good.length && fetched.every((b, i) => b === good[i]));
    const aside = await Deno.stat(`${cacheDir}/.quarantine/fixture/dense/@main/onnx/model.onnx`);
    assert.equal(aside.size, good.length >> 1);
    assert.ok(w.logs.some((l) => l.includes("model_files_quarantined")));
  } finally {
    await w.close();
    await hub.close();
    await Deno.remove(cacheDir, { recursive: true });
  }
});
