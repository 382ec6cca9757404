/**
 * The README's first run, end to end with real processes: `deno task start` (the exact command
 * of deno.json) on a free port with a fresh cache directory and an unreachable model hub, then
 * every self-contained curl example of README.md, docs/api.md and docs/extract.md (parsed from
 * them) must answer 200. Also: a second
 * start reuses the offline models, each request is logged once, Deno's start-up diagnostics stay
 * quiet, and a port in use is one line naming the port and the setting.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Proc, ROOT } from "../procs.ts";
import { type CurlExample, curlExamples, svcModelsLine } from "./readme_examples.ts";
import { sentenceTransformersExport } from "../../user_models/repos.ts";
import { deadline } from "@svc/shared/deadline";
import { taskArgs } from "./tasks.ts";
import { firstRunEnv, stackUrl } from "./stack.ts";
import { ensureFixtures } from "@svc/fixture-models";
import { startFakeHub } from "../../fake_hub/server.ts";
import { copyDir } from "../../helpers/files.ts";

/** `deno task start`'s command line from deno.json, without the leading `deno`. */
const startArgs = () => taskArgs("start");

Deno.test({
  name: "quickstart: deno task start serves the docs' curl examples offline, 200 each",
  fn: async () => {
    const readme = await Deno.readTextFile(join(ROOT, "README.md"));
    const examples: CurlExample[] = [];
    for (const doc of EXAMPLE_DOCS) {
      examples.push(...curlExamples(await Deno.readTextFile(join(ROOT, doc))));
    }
    const sections = new Set(examples.map((e) => e.section));
    const required = [
      "Quickstart",
      OWN_MODEL,
      "POST /v1/encode/{model}",
      "POST /v1/score/{model}",
      "Cohere-compatible rerank and embed",
      "Entities",
      "Zero-shot classification",
      "Relations",
      "Structured data",
    ];
    for (const s of required) assert.ok(sections.has(s), s);
    const xdg = await Deno.makeTempDir({ prefix: "svc-quickstart-" });
    const args = await startArgs();
    // "Serve your own model" as written: its SVC_MODELS value, run from a folder holding the
    // directory it names, laid out as the export on the line before it writes it.
    const own = await ownModelFolder(readme, xdg);
    let proc = new Proc("start", args, firstRunEnv(xdg, own.env));
    try {
      const url = await stackUrl(proc);
      assert.ok(proc.lines.some((l) => l.includes("first start: writing the offline")));
      const ready = proc.lines.find((l) => l.startsWith("start: offline models ready"))!;
      assert.match(ready, /fixture\/dense.*fixture\/reranker.*fixture\/gliner/);
      // The banner's later lines may arrive in a later chunk than the one stackUrl waited for.
      const id = own.id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      const [mine] = await proc.waitForLine(new RegExp(`^start: SVC_MODELS: ${id} .*$`), 5_000);
      assert.match(mine, /ready \(dense, /);
      for (const ex of examples) {
        const res = await fetch(url + ex.path, {
          method: ex.method,
          headers: ex.headers,
          body: ex.body,
          signal: AbortSignal.timeout(120_000),
        });
        const text = await res.text();
        assert.equal(res.status, 200, `${ex.section}: ${ex.method} ${ex.path}: ${text}`);
        JSON.parse(text);
      }
      // One line per request (the router's), none of Deno's start-up diagnostics.
      const encodes = proc.lines.filter((l) =>
        / request .*path=\/v1\/encode\/fixture\/dense /.test(l)
      );
      const denseExamples = examples.filter((e) => e.path === "/v1/encode/fixture/dense").length;
      assert.equal(encodes.length, denseExamples, encodes.join("\n"));
      assert.ok(encodes.every((l) => l.includes(" router request ")), encodes.join("\n"));
      const noise = proc.lines.filter((l) => /experimental|nvidia-smi|weight file fetched/.test(l));
      assert.deepEqual(noise, []);
      assert.ok(proc.lines.some((l) => /weights fetched model=fixture\/dense files=\d+/.test(l)));
      assert.equal((await proc.stop(30_000)).code, 0, proc.tail());

      // Later starts reuse the offline models.
      proc = new Proc("start-again", args, firstRunEnv(xdg));
      const again = await stackUrl(proc);
      assert.ok(!proc.lines.some((l) => l.includes("first start")), proc.tail());
      const q = examples[0];
      const res = await fetch(again + q.path, { method: "POST", headers: q.headers, body: q.body });
      assert.equal(res.status, 200, await res.text());
      assert.equal((await proc.stop(30_000)).code, 0, proc.tail());
    } finally {
      await proc.kill().catch(() => {});
      await Deno.remove(xdg, { recursive: true });
    }
  },
});

Deno.test({
  name: "quickstart: a port in use is one line naming the port and SVC_PORT, exit 2",
  fn: async () => {
    const xdg = await Deno.makeTempDir({ prefix: "svc-quickstart-port-" });
    const holder = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (holder.addr as Deno.NetAddr).port;
    const proc = new Proc(
      "start-busy",
      await startArgs(),
      firstRunEnv(xdg, { SVC_PORT: String(port) }),
    );
    try {
      // Bounded: a regression that keeps serving must fail here, not hang the suite.
      const st = await deadline(
        proc.status,
        60_000,
        () => assert.fail(`still running:\n${proc.tail()}`),
      );
      await proc.stop(1000);
      assert.equal(st.code, 2, proc.tail());
      const errors = proc.lines.filter((l) => l.startsWith("start: router"));
      assert.equal(errors.length, 1, proc.tail());
      assert.match(errors[0], new RegExp(`port ${port} is already in use \\(SVC_PORT\\)`));
      assert.ok(!proc.lines.some((l) => /^\s+at /.test(l)), proc.tail());
    } finally {
      holder.close();
      await proc.kill().catch(() => {});
      await Deno.remove(xdg, { recursive: true });
    }
  },
});

Deno.test({
  name: "quickstart: with a reachable hub, built-in catalog models load through the local stack",
  fn: async () => {
    // A hub holding two built-in ids (one per bundle), with fixture files of the same families.
    const fixtures = await ensureFixtures();
    const root = await Deno.makeTempDir({ prefix: "svc-quickstart-hub-" });
    const xdg = await Deno.makeTempDir({ prefix: "svc-quickstart-xdg-" });
    const copies: [string, string][] = [
      ["dense", "BAAI/bge-small-en-v1.5"],
      ["ner", "Xenova/bert-base-NER"],
    ];
    for (const [fixture, repo] of copies) {
      await copyDir(join(fixtures, "cache/fixture", fixture), join(root, repo));
    }
    const hub = await startFakeHub({ root });
    const proc = new Proc("start-hub", await startArgs(), {
      ...firstRunEnv(xdg),
      SVC_HUB_URL: hub.url,
    });
    try {
      const url = await stackUrl(proc);
      const enc = await postJson(`${url}/v1/encode/BAAI/bge-small-en-v1.5`, {
        items: [{ text: "from the hub" }],
      });
      assert.equal(enc.status, 200, await enc.clone().text());
      assert.ok((await enc.json()).items[0].dense.values.length > 0);
      const ext = await postJson(`${url}/v1/extract/Xenova/bert-base-NER`, {
        items: [{ text: "Alice lives in Paris" }],
      });
      assert.equal(ext.status, 200, await ext.text());
      assert.ok(hub.requests.some((r) => r.path.startsWith("/BAAI/bge-small-en-v1.5/resolve/")));
      assert.ok(hub.requests.some((r) => r.path.startsWith("/Xenova/bert-base-NER/resolve/")));
      assert.equal((await proc.stop(30_000)).code, 0, proc.tail());
    } finally {
      await proc.kill().catch(() => {});
      await hub.close();
      await Deno.remove(root, { recursive: true });
      await Deno.remove(xdg, { recursive: true });
    }
  },
});

/** The documents whose examples run as written against `npm start`, README first. */
const EXAMPLE_DOCS = ["README.md", "docs/api.md", "docs/extract.md"];

/** The README section whose example serves a directory of the user's. */
const OWN_MODEL = "Serve your own model";

/**
 * The folder a reader runs the README's `SVC_MODELS=ID=./DIR npm start` in (npm and deno task
 * say it in INIT_CWD), holding DIR as the export command writes it; the environment to start with.
 */
async function ownModelFolder(
  readme: string,
  under: string,
): Promise<{ id: string; env: Record<string, string> }> {
  const value = svcModelsLine(readme, OWN_MODEL);
  assert.ok(value, `no "SVC_MODELS=… npm start" line under "${OWN_MODEL}"`);
  const m = /^([^=]+)=(\.\/[^;,]+)$/.exec(value);
  assert.ok(m, `the example serves one relative directory: ${value}`);
  const cwd = join(under, "reader");
  await sentenceTransformersExport(join(cwd, m[2]));
  return { id: m[1], env: { SVC_MODELS: value, INIT_CWD: cwd } };
}

/** POST a JSON body asking for JSON (bounded: a first load on a busy machine is slow). */
function postJson(url: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  });
}
