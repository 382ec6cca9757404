/**
 * Issue 16.12: internal file-system paths never reach a client, in an error message or in
 * `/v1/models` `last_error`; the log keeps them for the operator. A model whose weights are
 * corrupt makes ONNX Runtime name the file it failed to load.
 */
import assert from "node:assert/strict";
import { ensureFixtures } from "@svc/fixture-models";
import { startTestWorker } from "../worker/harness.ts";
import { copyDir } from "../helpers/files.ts";

Deno.test("internal paths: a failed load's answer and last_error name no file-system path", async () => {
  const fx = await ensureFixtures();
  const root = await Deno.makeTempDir({ prefix: "svc-paths-" });
  const cluster = `${root}/cluster`;
  const cacheDir = `${root}/local`;
  await copyDir(`${fx}/cache/fixture/dense`, `${cluster}/fixture/dense`);
  const model = `${cluster}/fixture/dense/onnx/model.onnx`;
  const bytes = await Deno.readFile(model);
  await Deno.writeFile(model, bytes.subarray(0, 200)); // not an ONNX graph any more
  const w = await startTestWorker({
    SVC_CLUSTER_CACHE: cluster,
    SVC_CACHE_DIR: cacheDir,
    SVC_MODEL_FILTER: "fixture/dense",
  }, { preload: false });
  try {
    const res = await fetch(`${w.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ items: [{ text: "hello" }] }),
    });
    const answer = await res.text();
    assert.equal(res.status, 502, answer);
    const models = await (await fetch(`${w.url}/v1/models`)).text();
    assert.match(models, /"last_error":\{"code":"MODEL_LOAD_FAILED"/);
    for (const text of [answer, models]) {
      for (const dir of [root, cluster, cacheDir, fx, Deno.cwd()]) {
        assert.ok(!text.includes(dir), `${dir} leaked into: ${text.slice(0, 400)}`);
      }
      assert.ok(!/(^|[\s'"(])\/[a-z0-9._-]+\/[a-z0-9._-]+/i.test(text), text.slice(0, 400));
    }
    // The operator still learns which file: the log has the full path.
    assert.ok(w.logs.some((l) => l.includes(root)), "the log names the file");
  } finally {
    await w.close();
    await Deno.remove(root, { recursive: true });
  }
});
