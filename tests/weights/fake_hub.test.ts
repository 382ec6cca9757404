/** The fake hub answers @huggingface/hub's own calls the way the real hub does. */
import assert from "node:assert/strict";
import { fileDownloadInfo, fileExists, listFiles, modelInfo } from "@huggingface/hub";
import { startFakeHub } from "../fake_hub/server.ts";
import { tinyModel, withTempDir, writeRepo } from "./helpers.ts";

const REPO = "acme/fake-check";

Deno.test("fake hub: library calls (fileDownloadInfo, fileExists, listFiles, modelInfo)", async () => {
  await withTempDir(async (tmp) => {
    const files = tinyModel(81);
    await writeRepo(tmp, REPO, files);
    const hub = await startFakeHub({ root: tmp, gated: { "acme/locked": "hf_k" } });
    try {
      const hubUrl = hub.url;
      const info = await fileDownloadInfo({ repo: REPO, path: "onnx/model.onnx", hubUrl });
      assert.equal(info?.size, files["onnx/model.onnx"].byteLength);
      assert.match(info!.etag, /^"[0-9a-f]{40}"$/);
      assert.equal(await fileDownloadInfo({ repo: REPO, path: "nope", hubUrl }), null);
      assert.equal(await fileExists({ repo: REPO, path: "config.json", hubUrl }), true);
      assert.equal(await fileExists({ repo: REPO, path: "nope.json", hubUrl }), false);
      const listed = await Array.fromAsync(listFiles({ repo: REPO, recursive: true, hubUrl }));
      assert.deepEqual(
        listed.filter((e) => e.type === "file").map((e) => [e.path, e.size]),
        [["config.json", 300], ["onnx/model.onnx", 6000], ["tokenizer.json", 2500]],
      );
      const m = await modelInfo({ name: REPO, hubUrl });
      assert.equal(m.name, REPO);
    } finally {
      await hub.close();
    }
  });
});

Deno.test("fake hub: HEAD, ranges, hub-style errors and the request log", async () => {
  await withTempDir(async (tmp) => {
    const files = tinyModel(82);
    await writeRepo(tmp, REPO, files);
    const hub = await startFakeHub({ root: tmp, gated: { [REPO]: "hf_k" } });
    try {
      const url = `${hub.url}/${REPO}/resolve/main/config.json`;
      const anon = await fetch(url);
      assert.equal(anon.status, 401);
      assert.equal(anon.headers.get("x-error-code"), "GatedRepo");
      await anon.body?.cancel();
      const wrong = await fetch(url, { headers: { authorization: "Bearer hf_other" } });
      assert.equal(wrong.status, 403);
      await wrong.body?.cancel();
      const auth = { authorization: "Bearer hf_k" };
      const head = await fetch(url, { method: "HEAD", headers: auth });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get("content-length"), "300");
      assert.equal(head.headers.get("x-repo-commit"), hub.commitOf(REPO));
      assert.ok(head.headers.get("etag"));
      const part = await fetch(url, { headers: { ...auth, range: "bytes=10-19" } });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get("content-range"), "bytes 10-19/300");
      assert.deepEqual(
        new Uint8Array(await part.arrayBuffer()),
        files["config.json"].slice(10, 20),
      );
      const missing = await fetch(`${hub.url}/${REPO}/resolve/main/nope`, { headers: auth });
      assert.equal(missing.status, 404);
      assert.equal(missing.headers.get("x-error-code"), "EntryNotFound");
      await missing.body?.cancel();
      const escape = await fetch(`${hub.url}/${REPO}/resolve/main/a%2F..%2F..%2Fx`);
      assert.equal(escape.status, 400);
      await escape.body?.cancel();
      assert.deepEqual(hub.requests.map((r) => r.status), [401, 403, 200, 206, 404, 400]);
      assert.equal(hub.requests[3].range, "bytes=10-19");
    } finally {
      await hub.close();
    }
  });
});
