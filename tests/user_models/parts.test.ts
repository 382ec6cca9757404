/**
 * The parts under SVC_MODELS, alone: the setting's entries, the "did you mean" search and its
 * bound, the ONNX graph signature reader, and repository listings (cluster cache directory, the
 * hub's tree API, remembered listings for an offline restart).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigError } from "@svc/shared/config";
import {
  boundedDistance,
  closestNames,
  MAX_CANDIDATES,
  notInCatalogMessage,
} from "@svc/shared/catalog/suggest";
import { loadWorkerSettings } from "@svc/worker/settings";
import { ProtoFormatError, readGraphSignature } from "@svc/onnx";
import { createRepoLister } from "#worker/weights/listing.ts";
import { createClusterCacheSource } from "#worker/weights/cluster_cache.ts";
import { createHubSource } from "#worker/weights/hub.ts";
import { createDirectorySource } from "#worker/weights/directory.ts";
import { createWeightStore } from "#worker/weights/store.ts";
import { WeightsError } from "#worker/weights/errors.ts";
import { startFakeHub } from "../fake_hub/server.ts";
import { openModel } from "../fixtures/testing.ts";
import { ensureFixtures } from "@svc/fixture-models";
import { fixtureDir } from "./repos.ts";

Deno.test("SVC_MODELS: hub ids, revisions, directories and entry settings parse", () => {
  const s = loadWorkerSettings({
    SVC_MODELS: " BAAI/bge-small-en-v1.5 , org/name@v1.2, acme/e5=./models/e5;pooling=mean;" +
      "normalize=false, acme/abs=/srv/x;max_sequence_length=256;family=dense",
    INIT_CWD: "/home/me/work",
  });
  assert.deepEqual(s.catalog.entries, [
    {
      kind: "hub",
      id: "BAAI/bge-small-en-v1.5",
      repo: "BAAI/bge-small-en-v1.5",
      revision: "main",
      options: {},
    },
    { kind: "hub", id: "org/name", repo: "org/name", revision: "v1.2", options: {} },
    {
      kind: "directory",
      id: "acme/e5",
      path: "/home/me/work/models/e5",
      options: { pooling: "mean", normalize: false },
    },
    {
      kind: "directory",
      id: "acme/abs",
      path: "/srv/x",
      options: { max_sequence_length: 256, family: "dense" },
    },
  ]);
  // Directories are weight sources of their own (read in place).
  assert.deepEqual([...s.weights.directories!], [
    ["acme/e5", "/home/me/work/models/e5"],
    ["acme/abs", "/srv/x"],
  ]);
});

Deno.test("SVC_MODELS: a bad entry stops start-up with a message naming the variable", () => {
  const bad: [string, RegExp][] = [
    ["https://huggingface.co/org/name", /hub repository org\/name\[@revision\].*no URL/],
    ["../etc/passwd", /give a directory an id/],
    ["/srv/models/e5", /give a directory an id, e\.g\. acme\/my-model=DIRECTORY/],
    ["org/..=/x", /need an id of the form org\/name/],
    ["single=/x", /need an id of the form org\/name/],
    ["org/name@bad/rev", /invalid revision/],
    ["org/x=/a;pooling=avg", /pooling must be one of mean, cls, max, last_token, none/],
    ["org/x=/a;color=red", /key one of family, pooling/],
    ["org/x=/a,org/x=/b", /names model org\/x twice/],
  ];
  for (const [value, message] of bad) {
    assert.throws(
      () => loadWorkerSettings({ SVC_MODELS: value }),
      (err) =>
        err instanceof ConfigError && err.issues[0].name === "SVC_MODELS" &&
        message.test(err.issues[0].message),
      value,
    );
  }
});

/**
 * Plain edit distance with swaps of neighbours (optimal string alignment): the reference for
 * the banded one.
 */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(
        d[i - 1][j] + 1,
        d[i][j - 1] + 1,
        d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

Deno.test("suggest: the banded distance equals the full one within its limit", () => {
  let seed = 7;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  const word = () => Array.from({ length: rand(9) }, () => "abc/-"[rand(5)]).join("");
  for (let i = 0; i < 3000; i++) {
    const a = word(), b = word(), limit = rand(4);
    const exact = editDistance(a, b);
    assert.equal(boundedDistance(a, b, limit), exact <= limit ? exact : limit + 1, `${a} ${b}`);
  }
});

Deno.test("suggest: the closest served names, case-insensitive; nothing far off", () => {
  const served = [
    "acme/emb-max",
    "acme/emb-mean",
    "acme/emb-cls",
    "acme/rr",
    "BAAI/bge-small-en-v1.5",
  ];
  // A swap of two letters is one edit: the intended name comes first.
  assert.deepEqual(closestNames("acme/emb-maen", served), ["acme/emb-mean", "acme/emb-max"]);
  assert.deepEqual(closestNames("ACME/RR", served), ["acme/rr"]);
  assert.deepEqual(closestNames("baai/bge-small-en-v1.6", served), ["BAAI/bge-small-en-v1.5"]);
  assert.deepEqual(closestNames("totally/different", served), []);
  assert.equal(
    notInCatalogMessage("acme/emb-maen", served),
    "model 'acme/emb-maen' is not in the catalog; did you mean acme/emb-mean or acme/emb-max?",
  );
  // Bounded: past MAX_CANDIDATES names the rest are not looked at, so a huge fleet costs the same.
  const many = Array.from({ length: MAX_CANDIDATES * 50 }, (_, i) => `org/model-${i}`);
  const t0 = performance.now();
  const found = closestNames("org/model-9x", [...many, "org/model-9x1"]);
  const ms = performance.now() - t0;
  assert.ok(!found.includes("org/model-9x1"), "names past the bound are not compared");
  assert.ok(found.length > 0 && found.every((n) => n.startsWith("org/model-9")));
  assert.ok(ms < 1000, `${ms} ms`);
  // The longest name a path may carry costs one banded pass per candidate.
  const long = "a".repeat(256);
  assert.deepEqual(closestNames(long, ["a".repeat(255)]), ["a".repeat(255)]);
});

Deno.test("graph signature: the declared inputs and outputs, read without loading the model", async () => {
  for (
    const [fixture, path] of [
      ["dense", "onnx/model.onnx"],
      ["gliner", "onnx/model.onnx"],
      ["clip", "onnx/vision_model.onnx"],
      ["detr", "onnx/model.onnx"],
    ]
  ) {
    const file = join(await fixtureDir(fixture), path);
    const sig = await readGraphSignature(file);
    const m = await openModel(await Deno.readFile(file));
    assert.deepEqual(sig.inputs.map((i) => i.name), [...m.inputNames], fixture);
    assert.deepEqual(sig.outputs.map((o) => o.name), [...m.outputNames], fixture);
    await m.session.release();
  }
  const dense = await readGraphSignature(join(await fixtureDir("dense"), "onnx/model.onnx"));
  assert.deepEqual(dense.outputs, [
    { name: "last_hidden_state", type: "float32", dims: ["batch", "seq", 32] },
  ]);
  assert.deepEqual(dense.inputs[0], { name: "input_ids", type: "int64", dims: ["batch", "seq"] });
  // A file cut short, or not a model at all, is a format error (never a crash or a hang).
  const tmp = await Deno.makeTempDir({ prefix: "svc-graph-" });
  try {
    const bytes = await Deno.readFile(join(await fixtureDir("dense"), "onnx/model.onnx"));
    await Deno.writeFile(join(tmp, "cut.onnx"), bytes.subarray(0, bytes.length / 2));
    await assert.rejects(readGraphSignature(join(tmp, "cut.onnx")), ProtoFormatError);
    await Deno.writeTextFile(join(tmp, "text.onnx"), '{"not": "a model"}');
    await assert.rejects(readGraphSignature(join(tmp, "text.onnx")), ProtoFormatError);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("listing: a cluster cache directory, then the hub; remembered once usable", async () => {
  const fx = await ensureFixtures();
  const cacheDir = await Deno.makeTempDir({ prefix: "svc-listing-" });
  const hubRoot = await Deno.makeTempDir({ prefix: "svc-listing-hub-" });
  await Deno.mkdir(join(hubRoot, "acme"));
  await Deno.symlink(join(fx, "cache/fixture/clip"), join(hubRoot, "acme/clip"));
  const hub = await startFakeHub({ root: hubRoot });
  try {
    const cluster = createClusterCacheSource({ location: join(fx, "cache") });
    const lister = createRepoLister({
      cacheDir,
      sources: [cluster, createHubSource({ hubUrl: hub.url })],
    });
    const fromCluster = await lister.list("fixture", "main").catch((e) => e);
    assert.ok(fromCluster instanceof Error, "an id must be org/name");
    const dense = await lister.list("fixture/dense", "main");
    assert.equal(dense.source, "cluster-cache");
    assert.ok(dense.files.includes("onnx/model.onnx") && dense.files.includes("config.json"));
    const clip = await lister.list("acme/clip", "main");
    assert.equal(clip.source, "hub");
    assert.ok(clip.files.includes("onnx/vision_model.onnx"));
    // Not remembered until the caller found it usable; then read back without a source.
    const asked = hub.requests.length;
    assert.equal((await lister.list("acme/clip", "main")).source, "hub");
    await clip.remember();
    const again = await lister.list("acme/clip", "main");
    assert.equal(again.source, "local-cache");
    assert.deepEqual(again.files, clip.files);
    assert.equal(hub.requests.length, asked + 1);
    // A repository nobody has.
    await assert.rejects(
      lister.list("acme/nothing-here", "main"),
      (err) => err instanceof WeightsError && /acme\/nothing-here/.test(err.message),
    );
  } finally {
    await hub.close();
    await Deno.remove(cacheDir, { recursive: true });
    await Deno.remove(hubRoot, { recursive: true });
  }
});

Deno.test("directory source: files read in place, a missing one is not found (never the hub)", async () => {
  const dir = await fixtureDir("dense");
  const cacheDir = await Deno.makeTempDir({ prefix: "svc-dirsrc-" });
  let hubAsked = 0;
  const hub = {
    name: "hub",
    fetchTo: () => {
      hubAsked++;
      return Promise.resolve(false);
    },
  };
  try {
    const store = createWeightStore({
      cacheDir,
      sources: [createDirectorySource(new Map([["acme/dense", dir]])), hub],
    });
    const files = await store.ensureFiles("acme/dense", "local", {
      model: "onnx/model.onnx",
      tokenizer: "tokenizer.json",
    });
    assert.equal(files.model, join(dir, "onnx/model.onnx"));
    await assert.rejects(
      store.ensureFiles("acme/dense", "local", { model: "onnx/absent.onnx" }),
      (err) => err instanceof WeightsError && err.failure === "not_found",
    );
    assert.equal(hubAsked, 0);
    assert.deepEqual([...Deno.readDirSync(cacheDir)], [], "nothing was copied");
  } finally {
    await Deno.remove(cacheDir, { recursive: true });
  }
});
