/**
 * A model directory stays inside itself, and the JSON files a model brings are bounded: a link
 * to a file outside the directory is refused (detection, and the weights the worker loads) with
 * an error that names the file and quotes nothing of it, unless SVC_MODELS_FOLLOW_LINKS allows
 * links; a link inside stays fine. Configuration and tokenizer files over their size or nesting
 * bound, or not JSON, fail naming the file and the place, never their content.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { directoryView } from "#worker/catalog/detect/repo_view.ts";
import { OutsideDirectoryError } from "#worker/weights/contained.ts";
import { createDirectorySource } from "#worker/weights/directory.ts";
import {
  DEFAULT_MODEL_JSON_BOUNDS,
  ModelFileError,
  readModelJson,
} from "#worker/weights/model_json.ts";
import { loadTextTokenizer } from "#worker/families/text/tokenizer.ts";
import { loadErrorClass } from "#worker/registry/load_failure.ts";
import { type Json, postJson, startTestWorker } from "../worker/harness.ts";
import { sentenceTransformersRepo } from "./repos.ts";

/** What the outside file holds: none of it may appear in any error. */
const SECRET = "root:x:0:0:root-secret-line:/root:/bin/bash\n";

/** A repository in `root/repo` whose `config.json` links to `root/foreign/passwd`. */
async function linkedRepo(root: string): Promise<string> {
  const repo = await sentenceTransformersRepo(join(root, "repo"), { pooling: "mean" });
  await Deno.mkdir(join(root, "foreign"));
  await Deno.writeTextFile(join(root, "foreign/passwd"), SECRET);
  await Deno.remove(join(repo, "config.json"));
  await Deno.symlink(join(root, "foreign/passwd"), join(repo, "config.json"));
  return repo;
}

async function withTemp(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-contained-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  assert.fail("it succeeded");
}

/** No part of the secret line is in `text`. */
function quotesNothing(text: string): void {
  for (const part of ["root:x", "root-secret", "/bin/bash", "passwd", "foreign"]) {
    assert.ok(!text.includes(part), `"${part}" in: ${text}`);
  }
}

Deno.test("model directory: a link to a file outside is refused, quoting nothing of it", async () => {
  await withTemp(async (root) => {
    const repo = await linkedRepo(root);
    const view = await directoryView(repo, "acme/x");
    const err = await rejection(view.json("config.json"));
    assert.ok(err instanceof OutsideDirectoryError, String(err));
    assert.match(err.message, /^config\.json: resolves outside the model's directory/);
    assert.match(err.message, /SVC_MODELS_FOLLOW_LINKS/);
    quotesNothing(err.message);
    assert.equal(loadErrorClass(err), "incompatible");
    // Allowed by the setting, the file is read: and its parse error still quotes nothing.
    const open = await directoryView(repo, "acme/x", { followLinks: true });
    const parse = await rejection(open.json("config.json"));
    assert.ok(parse instanceof ModelFileError, String(parse));
    assert.equal(parse.message, "config.json: is not valid JSON (an unexpected character)");
  });
});

Deno.test("model directory: a linked ONNX graph elsewhere is not loaded; links inside are fine", async () => {
  await withTemp(async (root) => {
    const repo = await sentenceTransformersRepo(join(root, "repo"), {
      pooling: "mean",
      keepInt8: true,
    });
    await Deno.mkdir(join(root, "foreign"));
    await Deno.rename(join(repo, "onnx/model.onnx"), join(root, "foreign/model.onnx"));
    await Deno.symlink(join(root, "foreign/model.onnx"), join(repo, "onnx/model.onnx"));
    // A link that stays inside the directory (relative, as hub snapshots have).
    await Deno.symlink("onnx/model_int8.onnx", join(repo, "model.onnx"));
    const source = createDirectorySource(new Map([["acme/x", repo]]));
    const ref = { repo: "acme/x", revision: "main", path: "onnx/model.onnx", modelId: "acme/x" };
    const err = await rejection(source.localPath!(ref));
    assert.ok(err instanceof OutsideDirectoryError, String(err));
    quotesNothing(err.message);
    const inside = await source.localPath!({ ...ref, path: "model.onnx" });
    assert.equal(inside, await Deno.realPath(join(repo, "onnx/model_int8.onnx")));
    const allowed = createDirectorySource(new Map([["acme/x", repo]]), true);
    assert.equal(await allowed.localPath!(ref), join(repo, "onnx/model.onnx"));
    // Detection's path to the graph is refused alike.
    const view = await directoryView(repo, "acme/x");
    assert.ok((await rejection(view.local("onnx/model.onnx"))) instanceof OutsideDirectoryError);
  });
});

Deno.test("model JSON: size and nesting bounds, errors naming the file and the place", async () => {
  await withTemp(async (dir) => {
    const bounds = { ...DEFAULT_MODEL_JSON_BOUNDS, maxBytes: 2048, maxTokenizerBytes: 64 * 1024 };
    const write = async (name: string, text: string) => {
      await Deno.writeTextFile(join(dir, name), text);
      return join(dir, name);
    };
    const big = await write("config.json", JSON.stringify({ pad: "x".repeat(3000) }));
    const over = await rejection(readModelJson(big, bounds, "config"));
    assert.ok(over instanceof ModelFileError);
    assert.match(
      over.message,
      /^config\.json: is \d+ bytes, more than the 2048 allowed \(SVC_MAX_MODEL_JSON_BYTES\)$/,
    );
    // A tokenizer gets its own, larger bound.
    assert.ok(await readModelJson(big, bounds, "tokenizer"));
    const huge = await write("tokenizer.json", JSON.stringify({ pad: "x".repeat(70 * 1024) }));
    const tooBig = await rejection(readModelJson(huge, bounds, "tokenizer"));
    assert.match(
      tooBig.message,
      /^tokenizer\.json: is \d+ bytes, more than the 65536 allowed \(SVC_MAX_TOKENIZER_JSON_BYTES\)$/,
    );
    // 5 M nested arrays: refused before JSON.parse builds any of them.
    const deep = await write("tokenizer.json", "[".repeat(5_000_000) + "]".repeat(5_000_000));
    const nested = await rejection(readModelJson(deep, DEFAULT_MODEL_JSON_BOUNDS, "tokenizer"));
    assert.equal(
      nested.message,
      "tokenizer.json: nests arrays and objects deeper than 64 levels (SVC_MAX_MODEL_JSON_DEPTH)",
    );
    // Through the tokenizer loader of every text family, the same error, naming the file.
    const viaLoader = await rejection(loadTextTokenizer({ tokenizer: deep }, 128));
    assert.equal(viaLoader.message, nested.message);
    assert.equal(loadErrorClass(viaLoader), "incompatible");
    // Invalid JSON: the place, not the text.
    const bad = await write("gliner_config.json", '{\n  "secret-value": 1,\n}');
    const parse = await rejection(readModelJson(bad, bounds, "config"));
    assert.equal(
      parse.message,
      "gliner_config.json: is not valid JSON (expected double-quoted property name at line 3 column 1)",
    );
    // A valid JSON file that is no tokenizer: named, and what the library said (no content).
    const notTok = await write("tokenizer.json", JSON.stringify([SECRET]));
    const wrong = await rejection(loadTextTokenizer({ tokenizer: notTok }, 128));
    assert.match(wrong.message, /^tokenizer\.json: is not a tokenizer this worker reads/);
    quotesNothing(wrong.message);
  });
});

Deno.test({
  name: "SVC_MODELS: a directory whose config.json links outside fails alone, quoting nothing",
  fn: async () => {
    const root = await Deno.makeTempDir({ prefix: "svc-contained-worker-" });
    const repo = await linkedRepo(root);
    const fine = await sentenceTransformersRepo(join(root, "fine"), { pooling: "mean" });
    const w = await startTestWorker({ SVC_MODELS: `acme/linked=${repo},acme/fine=${fine}` });
    try {
      const res = await fetch(`${w.url}/v1/models`, { headers: { accept: "application/json" } });
      const list = (await res.json()).models as Json[];
      const linked = list.find((m) => m.name === "acme/linked");
      assert.equal(linked.state, "failed");
      assert.match(linked.last_error.message, /config\.json: resolves outside/);
      const answer = await postJson(`${w.url}/v1/encode/acme/linked`, { items: [{ text: "x" }] });
      assert.equal(answer.status, 502);
      assert.equal(answer.body.detail.code, "MODEL_LOAD_FAILED");
      quotesNothing(JSON.stringify(list));
      quotesNothing(JSON.stringify(answer.body));
      quotesNothing(w.logs.join("\n"));
      const ok = await postJson(`${w.url}/v1/encode/acme/fine`, { items: [{ text: "x" }] });
      assert.equal(ok.status, 200);
    } finally {
      await w.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});
