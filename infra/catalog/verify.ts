/**
 * `catalog:verify`: for a machine with hub access. Downloads each entry through the worker's own
 * weight sources, opens its graphs and checks their input and output names against what the
 * family feeds and reads, then serves it from an in-process worker and runs a query/document
 * probe plus a known-answer check where the model is a real one (fixtures have random weights).
 */
import ort from "onnxruntime-node";
import sharp from "sharp";
import { isFamily, type ModelConfig } from "@svc/shared/catalog/schema";
import { createLogger } from "@svc/shared/log";
import { loadWorkerSettings } from "@svc/worker/settings";
import { type WeightStore, weightStoreFrom } from "@svc/worker/weights";
import { cosine, createWorker, familyOp, loadCatalog, serveWorkerApp } from "@svc/worker";
import { contractProblems, graphContracts } from "./family_io.ts";

/** The outcome for one entry: one row of the printed table. */
export interface VerifyRow {
  id: string;
  ok: boolean;
  /** `3 files, 90.1 MB`. */
  files: string;
  /** Declared graph inputs → outputs, per graph. */
  io: string;
  /** Checks that passed (short names). */
  passed: string[];
  /** What failed, readable on its own. */
  failures: string[];
  ms: number;
  /** Resident memory growth while the entry was verified (MB; rough: one process). */
  memoryMb: number;
}

/** Options of {@link verifyCatalog}. */
export interface VerifyOptions {
  /** Worker-style environment: SVC_CACHE_DIR, SVC_CLUSTER_CACHE, SVC_HUB_URL, HF_TOKEN... */
  env: Record<string, string>;
  /** Only this catalog id (else every entry the environment's catalog has). */
  model?: string;
  /** Progress lines (one per entry started). */
  progress?: (line: string) => void;
}

const QUERY = "How do I bake bread at home?";
const RELEVANT =
  "Mix flour, water, salt and yeast, let the dough rise, then bake it in a hot oven.";
const UNRELATED = "The central bank raised interest rates by a quarter point on Tuesday.";
const SIMILAR = [
  "A man is eating food.",
  "A man is eating a piece of bread.",
  "The stock market fell sharply today.",
];
const NER_TEXT = "My name is Wolfgang and I live in Berlin.";
const TOPIC_TEXT = "The team won the championship game in the final minute.";

/** Verify every entry (or `model`); rows in catalog order. */
export async function verifyCatalog(opts: VerifyOptions): Promise<VerifyRow[]> {
  const settings = loadWorkerSettings(opts.env);
  const catalog = await loadCatalog(settings.catalog);
  let entries = [...catalog.values()];
  if (opts.model !== undefined) {
    entries = entries.filter((c) => c.id === opts.model);
    if (entries.length === 0) throw new Error(`no catalog entry '${opts.model}'`);
  }
  const store = weightStoreFrom(settings.weights);
  const rows: VerifyRow[] = [];
  for (const config of entries) {
    opts.progress?.(`verifying ${config.id} ...`);
    rows.push(await verifyEntry(config, store, opts.env));
  }
  return rows;
}

/** Download, inspect and probe one entry; never throws (a failure is a row). */
export async function verifyEntry(
  config: ModelConfig,
  store: WeightStore,
  env: Record<string, string>,
): Promise<VerifyRow> {
  const started = performance.now();
  const rss0 = Deno.memoryUsage().rss;
  const row: VerifyRow = {
    id: config.id,
    ok: false,
    files: "-",
    io: "-",
    passed: [],
    failures: [],
    ms: 0,
    memoryMb: 0,
  };
  const finish = () => {
    row.ok = row.failures.length === 0;
    row.ms = Math.round(performance.now() - started);
    row.memoryMb = Math.max(0, Math.round((Deno.memoryUsage().rss - rss0) / 1e6));
    return row;
  };
  try {
    const { repo, revision, gated } = config.hub;
    const files = await store.ensureFiles(repo, revision, config.files, {
      gated,
      modelId: config.id,
    });
    let bytes = 0;
    for (const p of new Set(Object.values(files))) bytes += (await Deno.stat(p)).size;
    row.files = `${Object.keys(files).length} files, ${(bytes / 1e6).toFixed(1)} MB`;
    row.passed.push("download");
    if (!isFamily(config.family)) {
      row.failures.push(`family '${config.family}' is not one this release runs`);
      return finish();
    }
    const io: string[] = [];
    for (const c of graphContracts(config)) {
      const path = files[c.role];
      if (!path) {
        row.failures.push(`files.${c.role} is missing from the entry`);
        continue;
      }
      const session = await ort.InferenceSession.create(path);
      try {
        io.push(`${session.inputNames.join(",")} -> ${session.outputNames.join(",")}`);
        row.failures.push(...contractProblems(c, session.inputNames, session.outputNames));
      } finally {
        await session.release();
      }
    }
    row.io = io.join(" | ");
    if (row.failures.length > 0) return finish();
    row.passed.push("graph names");
    await probe(config, env, row);
  } catch (err) {
    row.failures.push(err instanceof Error ? err.message : String(err));
  }
  return finish();
}

/** Serve the entry from an in-process worker and run the family's requests against it. */
async function probe(config: ModelConfig, env: Record<string, string>, row: VerifyRow) {
  const worker = await createWorker(
    { ...env, SVC_MODEL_FILTER: config.id, SVC_PRELOAD_MODELS: "" },
    { log: createLogger({ json: true, level: "error", component: "verify", write: () => {} }) },
  );
  // Served as the process serves it: the model operations are direct requests of the server.
  const server = await serveWorkerApp(worker, worker.settings.http, {
    hostname: "127.0.0.1",
    port: 0,
  }).catch(async (err) => {
    await worker.close();
    throw err;
  });
  try {
    const call = callOf(`http://127.0.0.1:${server.addr.port}`, config.id);
    // Random-weight fixtures answer, but their answers mean nothing: no known-answer checks.
    const real = !config.id.startsWith("fixture/");
    const check = (name: string, ok: boolean, why: string) => {
      if (ok) row.passed.push(name);
      else row.failures.push(`${name}: ${why}`);
    };
    switch (familyOp(config.family)) {
      case "encode":
        await probeEncode(config, call, check, real);
        break;
      case "score":
        await probeRanking(call, check, real);
        break;
      case "extract":
        await probeExtract(config, call, check, real);
        break;
    }
  } finally {
    await server.shutdown();
    await worker.close();
  }
}

type Call = (op: string, body: unknown) => Promise<{ status: number; body: Json }>;
type Check = (name: string, ok: boolean, why: string) => void;
// deno-lint-ignore no-explicit-any
type Json = any;

function callOf(baseUrl: string, id: string): Call {
  return async (op, body) => {
    const res = await fetch(`${baseUrl}/v1/${op}/${id}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: Json = text;
    try {
      parsed = JSON.parse(text);
    } catch { /* keep the text for the message */ }
    return { status: res.status, body: parsed };
  };
}

function answerError(r: { status: number; body: Json }): string {
  const d = r.body?.detail;
  return d ? `${r.status} ${d.code}: ${d.message}` : `${r.status} ${String(r.body).slice(0, 200)}`;
}

async function probeEncode(config: ModelConfig, call: Call, check: Check, real: boolean) {
  const isImageOnly = !config.inputs.includes("text");
  if (isImageOnly) return;
  const outputs = config.outputs.filter((o) =>
    o === "dense" || o === "sparse" || o === "multivector"
  );
  const enc = (texts: string[], inputType: string) =>
    call("encode", {
      items: texts.map((text) => ({ text })),
      params: { output_types: outputs, options: { input_type: inputType } },
    });
  const q = await enc([QUERY], "query");
  const d = await enc([RELEVANT], "document");
  const shapes: string[] = [];
  for (const r of [q, d]) {
    if (r.status !== 200) return check("query/document", false, answerError(r));
    const item = r.body.items[0];
    if (outputs.includes("dense") && item.dense?.dims !== config.dims.dense) {
      shapes.push(`dense dims ${item.dense?.dims}, catalog says ${config.dims.dense}`);
    }
    if (
      outputs.includes("multivector") && item.multivector?.token_dims !== config.dims.multivector
    ) {
      shapes.push(
        `multivector token_dims ${item.multivector?.token_dims}, catalog says ${config.dims.multivector}`,
      );
    }
    if (outputs.includes("sparse") && !(item.sparse?.indices?.length > 0)) {
      shapes.push("sparse output is empty");
    }
  }
  check("query/document", shapes.length === 0, shapes.join("; "));
  if (config.family !== "clip") await probeRanking(call, check, real);
  if (real && outputs.includes("dense")) {
    const r = await enc(SIMILAR, "document");
    if (r.status !== 200) return check("cosine order", false, answerError(r));
    const [a, b, c] = r.body.items.map((i: Json) => Float32Array.from(i.dense.values as number[]));
    const ab = cosine(a, b), ac = cosine(a, c);
    check(
      "cosine order",
      ab > ac,
      `cos(eating, bread) ${ab.toFixed(3)} <= cos(eating, stocks) ${ac.toFixed(3)}`,
    );
  }
}

async function probeRanking(call: Call, check: Check, real: boolean) {
  const r = await call("score", {
    query: { text: QUERY },
    items: [{ id: "unrelated", text: UNRELATED }, { id: "relevant", text: RELEVANT }],
  });
  if (r.status !== 200) return check("score pair", false, answerError(r));
  check("score pair", r.body.scores?.length === 2, "expected two scores");
  if (real) {
    check(
      "ranking",
      r.body.scores[0].item_id === "relevant",
      "the bread recipe did not rank first",
    );
  }
}

async function probeExtract(config: ModelConfig, call: Call, check: Check, real: boolean) {
  const f = config.family;
  if (f === "detection" || f === "zero_shot_detection") {
    const png = await sharp({
      create: { width: 64, height: 64, channels: 3, background: { r: 200, g: 40, b: 40 } },
    }).png().toBuffer();
    const data = btoa(String.fromCharCode(...png));
    const params = f === "zero_shot_detection" ? { labels: ["a red square"] } : {};
    const r = await call("extract", { items: [{ images: [{ data, format: "png" }] }], params });
    return check(
      "detect",
      r.status === 200 && Array.isArray(r.body.items?.[0]?.objects),
      answerError(r),
    );
  }
  if (f === "zero_shot" || f === "gliclass") {
    const r = await call("extract", {
      items: [{ text: TOPIC_TEXT }],
      params: { labels: ["sports", "politics"] },
    });
    if (r.status !== 200) return check("classify", false, answerError(r));
    const cls = r.body.items[0].classifications as { label: string }[];
    check("classify", cls.length > 0, "no classifications");
    if (real) check("topic", cls[0]?.label === "sports", `top label ${cls[0]?.label}, not sports`);
    return;
  }
  // Entity models: GLiNER takes label names, the BIO tagger its own classes.
  // A relations model takes relation types as labels and the entity types as an option.
  const params = f !== "gliner"
    ? {}
    : config.outputs.includes("relations")
    ? { labels: ["lives in"], options: { entity_labels: ["person", "location"] } }
    : { labels: ["person", "location"] };
  const r = await call("extract", { items: [{ text: NER_TEXT }], params });
  if (r.status !== 200) return check("entities", false, answerError(r));
  const ents = (r.body.items[0].entities ?? []) as { text: string }[];
  check("entities", Array.isArray(r.body.items[0].entities), "no entity list");
  if (real) {
    const found = ents.map((e) => e.text);
    check(
      "ner",
      found.includes("Wolfgang") && found.includes("Berlin"),
      `found ${JSON.stringify(found)}, expected Wolfgang and Berlin`,
    );
  }
}

/** The rows as a Markdown table (entry, files, inputs/outputs, checks, time, memory). */
export function formatTable(rows: readonly VerifyRow[]): string {
  const head = ["entry", "result", "files", "inputs -> outputs", "checks", "time", "memory"];
  const lines = [head, head.map(() => "---")];
  for (const r of rows) {
    const checks = [
      ...r.passed.map((p) => `ok ${p}`),
      ...r.failures.map((f) => `FAIL ${f}`),
    ].join("; ");
    lines.push([
      r.id,
      r.ok ? "pass" : "FAIL",
      r.files,
      r.io,
      checks.replaceAll("|", "/"),
      `${(r.ms / 1000).toFixed(1)} s`,
      `${r.memoryMb} MB`,
    ]);
  }
  return lines.map((l) => `| ${l.join(" | ")} |`).join("\n");
}
