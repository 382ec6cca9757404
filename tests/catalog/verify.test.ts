/**
 * catalog:verify's logic on the fixtures, through the fake hub: every fixture entry passes
 * (download, graph names, query/document probe), and an entry whose graph names its output
 * differently from what the family reads is a clear failure row, not a crash.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ensureFixtures } from "@svc/fixture-models";
import { startFakeHub } from "../fake_hub/server.ts";
import { GraphBuilder } from "@svc/onnx/writer";
import { formatTable, verifyCatalog } from "#infra/catalog/verify.ts";
import { parseArgs } from "#infra/catalog_verify.ts";

function envFor(hubUrl: string, modelsDir: string, cacheDir: string, filter: string) {
  return {
    SVC_MODELS_DIR: modelsDir,
    SVC_CACHE_DIR: cacheDir,
    SVC_HUB_URL: hubUrl,
    SVC_MODEL_FILTER: filter,
    SVC_DEVICE: "cpu",
    SVC_INTRA_OP_THREADS: "1",
  };
}

Deno.test("catalog:verify passes every fixture model downloaded through the fake hub", async () => {
  const fx = await ensureFixtures();
  const cache = await Deno.makeTempDir({ prefix: "svc-verify-" });
  const hub = await startFakeHub({ root: join(fx, "cache") });
  try {
    const rows = await verifyCatalog({
      env: envFor(hub.url, join(fx, "models"), cache, "fixture/*"),
    });
    const table = formatTable(rows);
    assert.ok(rows.length >= 14, `every fixture entry verified:\n${table}`);
    for (const r of rows) {
      assert.ok(r.ok, `${r.id} failed:\n${table}`);
      assert.ok(r.passed.includes("download") && r.passed.includes("graph names"), r.id);
      assert.match(r.files, /^\d+ files, /);
    }
    // The probes ran: encode models answered a query/document pair and a score request.
    const dense = rows.find((r) => r.id === "fixture/dense")!;
    assert.deepEqual(dense.passed, ["download", "graph names", "query/document", "score pair"]);
    assert.match(dense.io, /input_ids.*-> last_hidden_state/);
    assert.ok(rows.find((r) => r.id === "fixture/ner")!.passed.includes("entities"));
    assert.ok(rows.find((r) => r.id === "fixture/detr")!.passed.includes("detect"));
    assert.ok(
      hub.requests.some((q) => q.path.includes("/resolve/main/")),
      "files came from the hub",
    );
  } finally {
    await hub.close();
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("catalog:verify reports a graph with an unexpected output name as a failure", async () => {
  const fx = await ensureFixtures();
  const tmp = await Deno.makeTempDir({ prefix: "svc-verify-bad-" });
  const repo = join(tmp, "hub", "bad", "renamed-output");
  await Deno.mkdir(join(repo, "onnx"), { recursive: true });
  const g = new GraphBuilder("bad");
  g.input("input_ids", "int64", ["batch", "seq"]);
  g.input("attention_mask", "int64", ["batch", "seq"]);
  g.op("Cast", ["attention_mask"], { to: 1 }, "weird_output");
  g.output("weird_output", "float32", ["batch", "seq"]);
  await Deno.writeFile(join(repo, "onnx", "model.onnx"), g.toBytes());
  await Deno.copyFile(join(fx, "cache/fixture/dense/tokenizer.json"), join(repo, "tokenizer.json"));
  await Deno.mkdir(join(tmp, "models"));
  await Deno.writeTextFile(
    join(tmp, "models", "bad.json"),
    JSON.stringify({
      id: "bad/renamed-output",
      family: "dense",
      hub: { repo: "bad/renamed-output", revision: "main" },
      files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
      inputs: ["text"],
      outputs: ["dense"],
      dims: { dense: 32 },
      max_sequence_length: 128,
    }),
  );
  const hub = await startFakeHub({ root: join(tmp, "hub") });
  try {
    const rows = await verifyCatalog({
      env: envFor(hub.url, join(tmp, "models"), join(tmp, "cache"), "bad/*"),
      model: "bad/renamed-output",
    });
    assert.equal(rows.length, 1);
    const [r] = rows;
    assert.equal(r.ok, false);
    assert.deepEqual(r.passed, ["download"]);
    assert.equal(r.failures.length, 1);
    assert.match(r.failures[0], /reads output last_hidden_state or .*the graph has weird_output/);
    assert.match(formatTable(rows), /\| bad\/renamed-output \| FAIL \|/);
    await assert.rejects(
      verifyCatalog({
        env: envFor(hub.url, join(tmp, "models"), join(tmp, "cache"), "bad/*"),
        model: "bad/none",
      }),
      /no catalog entry 'bad\/none'/,
    );
  } finally {
    await hub.close();
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("catalog:verify arguments: --model ID, --model=ID, --help; others refused", () => {
  assert.deepEqual(parseArgs([]), { help: false });
  assert.deepEqual(parseArgs(["--model", "a/b"]), { help: false, model: "a/b" });
  assert.deepEqual(parseArgs(["--model=a/b"]), { help: false, model: "a/b" });
  assert.equal(parseArgs(["--help"]).help, true);
  assert.equal(parseArgs(["-h"]).help, true);
  assert.throws(() => parseArgs(["--bogus"]), /Unknown option '--bogus' \(see --help\)/);
  assert.throws(() => parseArgs(["--model"]), /'--model <value>' argument missing/);
  assert.throws(() => parseArgs(["a/b"]), /positional arguments/);
});
