/**
 * Issue 35.5, ready means ready: a model named in `SVC_MODELS` is loaded before the worker is
 * ready (its first request pays no load), and a request that must load a model logs which
 * model and why.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { postJson, startTestWorker } from "./harness.ts";
import { sentenceTransformersRepo } from "../user_models/repos.ts";
import { getJson } from "../router/helpers/router.ts";

Deno.test("ready: SVC_MODELS entries load before ready; a load on request says which and why", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-ready-" });
  const dir = await sentenceTransformersRepo(join(root, "named"), { pooling: "mean" });
  const w = await startTestWorker({ SVC_MODELS: `acme/named=${dir}` });
  try {
    // The harness returns once preload() has run: the state /readyz turns 200 on.
    assert.equal(w.instance.ctx.state.ready, true);
    const named = await getJson(`${w.url}/v1/models/acme%2Fnamed`);
    assert.equal(named.body.state, "loaded", "named in SVC_MODELS: loaded before ready");
    const other = await getJson(`${w.url}/v1/models/fixture%2Fsparse`);
    assert.equal(other.body.state, "available", "not named: not loaded");

    const first = await postJson(`${w.url}/v1/encode/acme%2Fnamed`, { items: [{ text: "a" }] });
    assert.equal(first.status, 200);
    const loads = () =>
      w.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === "loading a model for a request");
    assert.deepEqual(loads(), [], "a preloaded model is not loaded again");
    const cold = await postJson(`${w.url}/v1/encode/fixture%2Fsparse`, {
      items: [{ text: "a" }],
      params: { output_types: ["sparse"] },
    });
    assert.equal(cold.status, 200, JSON.stringify(cold.body));
    const [line] = loads();
    assert.equal(line.model, "fixture/sparse");
    assert.match(line.reason, /first request for it: only models in SVC_MODELS or SVC_PRELOAD/);
    assert.equal(loads().length, 1);
  } finally {
    await w.close();
    await Deno.remove(root, { recursive: true });
  }
});
