/**
 * The client against real router and worker processes on 127.0.0.1: a call to a pool scaled to
 * zero gets 202s and succeeds once a worker joins; encode answers carry typed arrays that agree in
 * msgpack and JSON for every dtype; score, extract, the catalog and /v1/embeddings; a failed load
 * (502 MODEL_LOAD_FAILED), an unknown model and a missing API key are typed errors after one
 * request. Then the client, bundled for browsers, runs under Node against the same router.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { SvcClient, SvcError } from "@svc/client";
import { VERSION } from "@svc/shared/version";
import { ensureFixtures } from "@svc/fixture-models";
import { type Proc, ROOT, startRouterProc, startWorkerProc, stopAll, workerIds } from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";

const KEY = "client-live-test-key-0123456789";

/** A fetch that records the status of every answer (how many requests a call made). */
function countingFetch(): { statuses: number[]; fetch: typeof fetch } {
  const statuses: number[] = [];
  return {
    statuses,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      statuses.push(res.status);
      return res;
    },
  };
}

/** The SvcError `p` rejects with (it must reject). */
async function rejection(p: Promise<unknown>): Promise<SvcError> {
  const err = await p.then(() => assert.fail("expected an SvcError"), (e) => e);
  assert.ok(err instanceof SvcError, String(err));
  return err;
}

/** Every value of a typed array, for comparisons. */
const list = (a: ArrayLike<number>) => Array.from(a);

Deno.test({
  name: "client: real router and workers (202 until a worker joins, typed results, typed errors)",
  fn: async (t) => {
    const fx = await ensureFixtures();
    const tmp = await Deno.makeTempDir({ prefix: "client-live-" });
    let router: Proc | undefined;
    let worker: Proc | undefined;
    try {
      // The fixture catalog plus an entry whose graph exists nowhere: its load fails for good.
      const modelsDir = join(tmp, "models");
      await Deno.mkdir(modelsDir);
      for await (const e of Deno.readDir(`${fx}/models`)) {
        await Deno.copyFile(`${fx}/models/${e.name}`, join(modelsDir, e.name));
      }
      const entry = JSON.parse(await Deno.readTextFile(`${fx}/models/dense.json`));
      entry.id = "fixture/dense-missing";
      entry.files.model = "onnx/missing.onnx";
      await Deno.writeTextFile(join(modelsDir, "dense-missing.json"), JSON.stringify(entry));
      const workerEnv = {
        SVC_MACHINE_PROFILE: "cpu",
        SVC_MODELS_DIR: modelsDir,
        // Offline: a file missing from the cluster cache is "not found", a permanent failure.
        SVC_HUB_DISABLED: "1",
      };

      const r = await startRouterProc("client-router", {
        SVC_PROVISION_RETRY_AFTER_S: "1",
        SVC_API_KEYS: KEY,
        // A pool that scales to zero is configured (an unknown profile is a 400).
        SVC_MACHINE_PROFILES: "cpu",
      });
      router = r.proc;
      // A first worker makes the router learn the fixture models' bundle, then leaves.
      const seed = await startWorkerProc("client-seed", r.url, workerEnv);
      try {
        await waitFor(async () => (await workerIds(r.url, KEY)).length === 1, "the seed", 60_000);
      } finally {
        await seed.stop();
      }
      await waitFor(
        async () => (await workerIds(r.url, KEY)).length === 0,
        "an empty pool",
        20_000,
      );

      const client = new SvcClient({ baseUrl: r.url, apiKey: KEY, machineProfile: "cpu" });

      await t.step("202 while the pool is empty, then the answer once a worker joins", async () => {
        const seen = countingFetch();
        const polling = new SvcClient({
          baseUrl: r.url,
          apiKey: KEY,
          machineProfile: "cpu",
          fetch: seen.fetch,
          retry: { provisionInitialMs: 200, provisionMaxDelayMs: 1000, budgetMs: 120_000 },
        });
        const pending = polling.encode("fixture/dense", [{ id: "a", text: "hello world" }]);
        await waitFor(() => seen.statuses.includes(202), "a 202", 20_000);
        worker = await startWorkerProc("client-worker", r.url, workerEnv);
        const res = await pending;
        assert.equal(res.items[0].id, "a");
        const values = res.items[0].dense!.values;
        assert.ok(values instanceof Float32Array);
        assert.equal(values.length, 32);
        assert.equal(seen.statuses.at(-1), 200);
        assert.ok(seen.statuses.slice(0, -1).every((s) => s === 202), String(seen.statuses));
        assert.equal(polling.serverVersion, VERSION);
      });

      await t.step("encode: msgpack and JSON give the same typed arrays", async () => {
        const json = new SvcClient({
          baseUrl: r.url,
          apiKey: KEY,
          machineProfile: "cpu",
          format: "json",
        });
        const texts = ["cats sleep on the warm mat", "hello world"];
        for (const dtype of ["float32", "float16", "int8", "uint8", "binary"] as const) {
          const params = {
            output_types: ["dense", "sparse", "multivector"] as const,
            output_dtype: dtype,
          };
          const [a, b] = await Promise.all([
            client.encode("fixture/m3", texts, {
              ...params,
              output_types: [...params.output_types],
            }),
            json.encode("fixture/m3", texts, { ...params, output_types: [...params.output_types] }),
          ]);
          const type = {
            float32: Float32Array,
            float16: Float32Array,
            int8: Int8Array,
            uint8: Uint8Array,
            binary: Uint8Array,
          }[dtype];
          a.items.forEach((item, i) => {
            const other = b.items[i];
            assert.ok(item.dense!.values instanceof type, `${dtype} dense`);
            assert.ok(other.dense!.values instanceof type, `${dtype} dense (json)`);
            assert.deepEqual(list(item.dense!.values), list(other.dense!.values), dtype);
            assert.ok(item.sparse!.indices instanceof Int32Array);
            assert.ok(other.sparse!.indices instanceof Int32Array);
            assert.deepEqual(list(item.sparse!.indices), list(other.sparse!.indices));
            assert.ok(item.sparse!.values instanceof Float32Array);
            const mv = item.multivector!;
            assert.equal(mv.values.length, mv.num_tokens);
            assert.ok(mv.values.every((row) => row instanceof type));
            assert.deepEqual(mv.values.map(list), other.multivector!.values.map(list));
          });
        }
      });

      await t.step("score and extract", async () => {
        const scored = await client.score("fixture/reranker", {
          id: "q",
          text: "where do cats sleep",
        }, [
          { id: "a", text: "cats sleep on the warm mat" },
          "stock prices",
        ]);
        assert.equal(scored.query_id, "q");
        assert.deepEqual(scored.scores.map((s) => s.rank), [0, 1]);
        // The string item has no id: it is answered as `item-{i}`.
        assert.deepEqual(scored.scores.map((s) => s.item_id).sort(), ["a", "item-1"]);
        const extracted = await client.extract("fixture/gliner", [{
          id: "x",
          text: "Alice lives in Paris.",
        }], {
          labels: ["person", "location"],
          options: { threshold: 0 },
        });
        assert.equal(extracted.items[0].id, "x");
        const entities = extracted.items[0].entities!;
        assert.ok(entities.length > 0);
        for (const e of entities) {
          assert.equal(e.text, Array.from("Alice lives in Paris.").slice(e.start, e.end).join(""));
        }
      });

      await t.step("catalog and embeddings", async () => {
        const models = await client.listModels();
        assert.ok(models.some((m) => m.name === "fixture/dense"));
        const info = await client.getModel("fixture/dense");
        assert.equal(info.name, "fixture/dense");
        assert.equal(info.dims.dense, 32);
        const emb = await client.embeddings({ model: "fixture/dense", input: ["hello world"] });
        assert.ok(emb.data[0].embedding instanceof Float32Array);
        const enc = await client.encode("fixture/dense", ["hello world"]);
        list(emb.data[0].embedding).forEach((x, i) => {
          assert.ok(Math.abs(x - enc.items[0].dense!.values[i]) < 1e-6, `embedding[${i}]`);
        });
      });

      await t.step("typed errors after one request", async () => {
        const seen = countingFetch();
        const c = new SvcClient({
          baseUrl: r.url,
          apiKey: KEY,
          machineProfile: "cpu",
          fetch: seen.fetch,
        });
        const failed = await rejection(c.encode("fixture/dense-missing", ["x"]));
        assert.equal(failed.code, "MODEL_LOAD_FAILED");
        assert.equal(failed.status, 502);
        assert.equal(failed.detail.permanent, true);
        assert.deepEqual(seen.statuses, [502], "raised at once, never retried");
        const missing = await rejection(c.getModel("fixture/none"));
        assert.equal(missing.code, "MODEL_NOT_FOUND");
        assert.equal(missing.status, 404);
        const noKey = await rejection(new SvcClient({ baseUrl: r.url }).listModels());
        assert.equal(noKey.code, "UNAUTHORIZED");
        assert.equal(noKey.status, 401);
      });

      await t.step("the browser bundle runs under Node", async () => {
        const bundle = join(tmp, "client.mjs");
        const built = await new Deno.Command(Deno.execPath(), {
          args: ["bundle", "-q", "--platform=browser", "client/mod.ts", "-o", bundle],
          cwd: ROOT,
          stdout: "piped",
          stderr: "piped",
        }).output();
        assert.ok(built.success, new TextDecoder().decode(built.stderr));
        const src = await Deno.readTextFile(bundle);
        assert.doesNotMatch(src, /\bDeno\./, "no Deno API in the bundle");
        assert.doesNotMatch(src, /from\s+["']node:/, "no Node built-in in the bundle");
        const ran = await new Deno.Command("node", {
          args: [join(ROOT, "tests/client/node_smoke.mjs"), bundle, r.url, KEY],
          stdout: "piped",
          stderr: "piped",
          signal: AbortSignal.timeout(60_000),
        }).output();
        const err = new TextDecoder().decode(ran.stderr);
        assert.ok(ran.success, err);
        const out = JSON.parse(new TextDecoder().decode(ran.stdout).trim().split("\n").at(-1)!);
        assert.equal(out.dense.type, "Int8Array");
        assert.equal(out.dense.length, 32);
        assert.equal(out.sparseIndices, "Int32Array");
        assert.equal(out.scores.length, 2);
        assert.ok(out.models > 0);
        assert.deepEqual(out.notFound, { isSvcError: true, code: "MODEL_NOT_FOUND", status: 404 });
        assert.deepEqual(out.noKey, { code: "UNAUTHORIZED", status: 401 });
        assert.deepEqual(out.warnings, []);
        assert.equal(out.serverVersion, VERSION);
        // The same answer as the Deno client's.
        const deno = await client.encode("fixture/dense", ["hello world"], {
          output_dtype: "int8",
        });
        assert.deepEqual(out.denseValues, list(deno.items[0].dense!.values));
      });
    } finally {
      await stopAll([worker, router]);
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
    }
  },
});
