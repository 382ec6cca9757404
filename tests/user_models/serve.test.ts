/**
 * A worker serving SVC_MODELS entries through the real loading code and real ONNX graphs: fixture
 * repositories laid out as real exports (none in the catalog), each served through its family.
 * Dense vectors equal a reference pooling computed here from the raw graph's last_hidden_state;
 * the other families answer exactly what the same weights answer as built-in fixture entries.
 * Bad entries (no ONNX weights, an unknown architecture) fail alone, with their reason in
 * /v1/models, the status stream and the log. A hub repository works the same through the fake hub,
 * and again offline from the cache.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type Json, postJson, startTestWorker, type TestWorker } from "../worker/harness.ts";
import { cosine } from "../worker/expected.ts";
import { cpuFeatures } from "../helpers/cpu_features.ts";
import { base64, picture } from "../vision/helpers.ts";
import { startFakeHub } from "../fake_hub/server.ts";
import {
  checkpointRepo,
  clipRepo,
  glinerRepo,
  optimumExport,
  sentenceTransformersRepo,
  unknownArchitectureRepo,
} from "./repos.ts";
import { referenceLogit, referenceVector } from "./reference.ts";

/** The repositories of the main test, built once under `root`. */
async function buildRepos(root: string): Promise<Record<string, string>> {
  return {
    "acme/emb-mean": await sentenceTransformersRepo(join(root, "emb-mean"), {
      pooling: "mean",
      keepInt8: true,
    }),
    "acme/emb-cls": await sentenceTransformersRepo(join(root, "emb-cls"), { pooling: "cls" }),
    "acme/emb-max": await sentenceTransformersRepo(join(root, "emb-max"), { pooling: "max" }),
    "acme/emb-last": await sentenceTransformersRepo(join(root, "emb-last"), {
      pooling: "last_token",
    }),
    "acme/rr": await optimumExport("reranker", join(root, "rr")),
    "acme/ner": await optimumExport("ner", join(root, "ner")),
    "acme/gliner": await glinerRepo(join(root, "gliner")),
    "acme/clip": await clipRepo(join(root, "clip")),
    "acme/no-onnx": await checkpointRepo(join(root, "no-onnx")),
    "acme/odd": await unknownArchitectureRepo(join(root, "odd")),
  };
}

async function getJson(url: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(url, { headers: { accept: "application/json" } });
  return { status: res.status, body: await res.json() };
}

const TEXTS = ["the cat sat on the mat", "a short one", "red apples and green pears in a bowl"];

/** Encode `texts` on `model` (JSON) and return the dense vectors. */
async function encode(w: TestWorker, model: string, texts: string[], inputType?: string) {
  const r = await postJson(`${w.url}/v1/encode/${model}`, {
    items: texts.map((text) => ({ text })),
    ...(inputType ? { params: { options: { input_type: inputType } } } : {}),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return (r.body.items as Json[]).map((it) => Float32Array.from(it.dense.values as number[]));
}

Deno.test({
  name: "SVC_MODELS: directories served through their families, configured from their files",
  fn: async () => {
    const root = await Deno.makeTempDir({ prefix: "svc-user-models-" });
    const repos = await buildRepos(root);
    const entries = Object.entries(repos).map(([id, dir]) => `${id}=${dir}`).join(",");
    const w = await startTestWorker({ SVC_MODELS: entries });
    try {
      // The catalog lists every entry: served ones with dims and lengths from their files,
      // failed ones with their reason.
      const list = (await getJson(`${w.url}/v1/models`)).body.models as Json[];
      const byName = new Map(list.map((m) => [m.name, m]));
      const mean = byName.get("acme/emb-mean");
      assert.deepEqual(mean.dims, { dense: 32 });
      assert.equal(mean.max_sequence_length, 64);
      assert.equal(mean.family, "dense");
      // Named in SVC_MODELS: loaded before the worker is ready (issue 35.5).
      assert.equal(mean.state, "loaded");
      assert.equal(byName.get("acme/rr").family, "reranker");
      assert.equal(byName.get("acme/ner").family, "token_classification");
      assert.equal(byName.get("acme/no-onnx").state, "failed");
      assert.match(byName.get("acme/no-onnx").last_error.message, /no ONNX graph.*optimum-cli/);
      assert.equal(byName.get("acme/odd").state, "failed");
      assert.match(byName.get("acme/odd").last_error.message, /FrobnicatorForTimeTravel/);

      // What was detected, and from which file.
      const info = (await getJson(`${w.url}/v1/models/acme/emb-mean`)).body;
      assert.deepEqual(info.detected.source, { kind: "directory" });
      assert.equal(info.detected.files.model, "onnx/model_int8.onnx", "int8 on a CPU worker");
      assert.deepEqual(info.detected.settings.pooling, {
        value: "mean",
        from: "1_Pooling/config.json pooling_mode_mean_tokens",
      });
      assert.equal(info.detected.settings.normalize.value, true);
      assert.equal(
        info.detected.settings.max_sequence_length.from,
        "sentence_bert_config.json max_seq_length",
      );
      assert.deepEqual(info.detected.settings.prompts.value, {
        query: "query: ",
        document: "passage: ",
      });
      assert.ok(!JSON.stringify(info).includes(root), "no file-system path is shown");

      // Dense: vectors equal the reference pooling of the graph each runs.
      const dense = [
        ["acme/emb-mean", "mean"],
        ["acme/emb-cls", "cls"],
        ["acme/emb-max", "max"],
        ["acme/emb-last", "last_token"],
      ] as const;
      for (const [model, pooling] of dense) {
        const graph = (await getJson(`${w.url}/v1/models/${model}`)).body.detected.files.model;
        const got = await encode(w, model, TEXTS);
        for (const [i, text] of TEXTS.entries()) {
          const want = await referenceVector(repos[model], graph, text, pooling);
          const c = cosine(got[i], want);
          assert.ok(c > 0.9999, `${model} "${text}": ${c} on ${cpuFeatures()}`);
        }
        // The query prompt of config_sentence_transformers.json goes before query texts.
        const [q] = await encode(w, model, ["red apples"], "query");
        const wantQ = await referenceVector(repos[model], graph, "query: red apples", pooling);
        const cq = cosine(q, wantQ);
        assert.ok(cq > 0.9999, `${model} query: ${cq} on ${cpuFeatures()}`);
      }

      // The int8 graph was checked against the float one when it loaded, and says so.
      const loaded = (await getJson(`${w.url}/v1/models/acme/emb-mean`)).body;
      assert.equal(loaded.quantization.checked, true, JSON.stringify(loaded.quantization));
      assert.equal(loaded.quantization.serving, "quantized", `on ${cpuFeatures()}`);
      assert.deepEqual(loaded.detected.settings.int8.value, "onnx/model_int8.onnx");
      assert.match(
        loaded.detected.settings.int8.from,
        /^load probe: agrees with onnx\/model.onnx on this CPU: mean cosine/,
      );
      // Named in SVC_MODELS, it was loaded (and its int8 graph checked) before ready (35.5).
      assert.deepEqual(info.quantization, loaded.quantization, "checked before the first request");

      // Cross-encoder: raw logits of the exported graph.
      const score = await postJson(`${w.url}/v1/score/acme/rr`, {
        query: { text: "red apples" },
        items: [{ id: "a", text: "apples are red" }, { id: "b", text: "the stock market" }],
      });
      assert.equal(score.status, 200, JSON.stringify(score.body));
      for (const s of score.body.scores as Json[]) {
        const doc = s.item_id === "a" ? "apples are red" : "the stock market";
        const want = await referenceLogit(repos["acme/rr"], "model.onnx", "red apples", doc);
        assert.ok(Math.abs(s.score - want) < 1e-4, `${s.item_id}: ${s.score} vs ${want}`);
      }

      // Token classification, GLiNER, CLIP: the same answers as the same weights served as the
      // built-in fixture entries.
      const same = async (op: string, model: string, fixture: string, body: unknown) => {
        const a = await postJson(`${w.url}/v1/${op}/${model}`, body);
        const b = await postJson(`${w.url}/v1/${op}/${fixture}`, body);
        assert.equal(a.status, 200, JSON.stringify(a.body));
        assert.equal(b.status, 200, JSON.stringify(b.body));
        assert.deepEqual(a.body.items, b.body.items, `${model} vs ${fixture}`);
      };
      const text = "Alice Smith flew from Paris to Berlin with Acme Corp";
      await same("extract", "acme/ner", "fixture/ner", { items: [{ id: "t", text }] });
      await same("extract", "acme/gliner", "fixture/gliner", {
        items: [{ id: "t", text }],
        params: { labels: ["person", "city"], options: { threshold: 0.0 } },
      });
      const png = base64(await picture(64, 48, "png"));
      await same("encode", "acme/clip", "fixture/clip", {
        items: [{ id: "t", text: "a dog on a beach" }, { id: "p", images: [{ data: png }] }],
      });

      // A misspelt name: 404 naming the closest served names.
      const typo = await postJson(`${w.url}/v1/encode/acme/emb-maen`, { items: [{ text: "x" }] });
      assert.equal(typo.status, 404);
      assert.match(typo.body.detail.message, /did you mean acme\/emb-mean\b/);
      const typoInfo = await getJson(`${w.url}/v1/models/acme/emb-maen`);
      assert.equal(typoInfo.status, 404);
      assert.match(typoInfo.body.detail.message, /did you mean acme\/emb-mean\b/);

      // Bad entries fail alone, with their reason, wherever they are looked at.
      const bad = await postJson(`${w.url}/v1/encode/acme/no-onnx`, { items: [{ text: "x" }] });
      assert.equal(bad.status, 502);
      assert.equal(bad.body.detail.code, "MODEL_LOAD_FAILED");
      assert.equal(bad.body.detail.error_class, "incompatible");
      assert.match(bad.body.detail.message, /ONNX/);
      assert.ok(!bad.body.detail.message.includes(root), "the client sees no directory path");
      const status = await w.instance.status.snapshot();
      const odd = status.models.find((m) => m.name === "acme/odd")!;
      assert.equal(odd.state, "available");
      assert.match(odd.last_error!.message, /config\.json architectures/);
      const failedLines = w.logs.filter((l) => l.includes('"model_load_failed"'));
      assert.ok(failedLines.some((l) => l.includes("acme/no-onnx") && l.includes("ONNX")));
      assert.ok(failedLines.some((l) => l.includes("acme/odd")));
      const configured = w.logs.find((l) =>
        l.includes('"model_configured"') && l.includes("acme/emb-mean")
      );
      assert.ok(configured?.includes("1_Pooling/config.json"), configured);
    } finally {
      await w.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "SVC_MODELS: a hub repository by id through the fake hub, then offline from the cache",
  fn: async () => {
    const hubRoot = await Deno.makeTempDir({ prefix: "svc-user-hub-" });
    const cacheDir = await Deno.makeTempDir({ prefix: "svc-user-hub-cache-" });
    const repo = await sentenceTransformersRepo(join(hubRoot, "acme/hub-emb"), {
      pooling: "cls",
    });
    const hub = await startFakeHub({ root: hubRoot });
    const env = {
      SVC_MODELS: "acme/hub-emb,acme/missing@v2",
      SVC_HUB_DISABLED: "",
      SVC_CLUSTER_CACHE: "",
      SVC_HUB_URL: hub.url,
      SVC_CACHE_DIR: cacheDir,
    };
    let w = await startTestWorker(env);
    try {
      const info = (await getJson(`${w.url}/v1/models/acme/hub-emb`)).body;
      assert.deepEqual(info.detected.source, {
        kind: "hub",
        repo: "acme/hub-emb",
        revision: "main",
      });
      assert.equal(info.detected.settings.pooling.value, "cls");
      // Configured from the listing and the small files, then loaded before ready (35.5).
      assert.ok(hub.requests.some((r) => r.path.endsWith("/onnx/model.onnx")));
      const [v] = await encode(w, "acme/hub-emb", [TEXTS[0]]);
      const want = await referenceVector(repo, "onnx/model.onnx", TEXTS[0], "cls");
      assert.ok(cosine(v, want) > 0.9999);
      assert.ok(hub.requests.some((r) => r.path.startsWith("/api/models/acme/hub-emb/tree/main")));
      assert.ok(hub.requests.some((r) => r.path.endsWith("/resolve/main/1_Pooling/config.json")));
      const missing = (await getJson(`${w.url}/v1/models/acme/missing`)).body;
      assert.equal(missing.state, "failed");
      assert.equal(missing.detected.source.revision, "v2");
      // Like the real hub, the fake one answers an anonymous caller 401 for a missing repository.
      assert.match(missing.last_error.message, /acme\/missing .*or does not exist/);
      await w.close();

      // Offline (the hub gone): configured from the cached listing and files, served as before.
      await hub.close();
      w = await startTestWorker({ ...env, SVC_HUB_URL: "http://127.0.0.1:9" });
      const [again] = await encode(w, "acme/hub-emb", [TEXTS[0]]);
      assert.ok(cosine(again, want) > 0.9999);
    } finally {
      await w.close();
      await hub.close().catch(() => {});
      await Deno.remove(hubRoot, { recursive: true });
      await Deno.remove(cacheDir, { recursive: true });
    }
  },
});
