/**
 * The clients people already run, unchanged, against a real router and worker (processes on
 * 127.0.0.1), and against the worker directly:
 *
 * - the `cohere-ai` SDK (`CohereClientV2`, `CohereClient` with `environment` set to the service):
 *   rerank equals /v1/score, embed equals /v1/encode (input types, embedding types, Matryoshka);
 *   with no worker for the pool, a Cohere call waits, then gets 503 with Cohere's `message`;
 * - the `openai` SDK: the real message of an error, `models.list()`;
 * - the SIE-style client (tests/compat/client): classification, detection and relation results
 *   carry every list, id-less items come back as `item-{i}`, and `getCapacity(gpu)` reads the
 *   gateway's `/health` workers (`gpu`, `healthy`).
 */
import assert from "node:assert/strict";
import { CohereClient, CohereClientV2 } from "cohere-ai";
import OpenAI from "openai";
import { VERSION } from "@svc/shared/version";
import {
  json,
  type Proc,
  startRouterProc,
  startWorkerProc,
  stopAll,
  workerIds,
} from "../router/e2e/procs.ts";
import { waitFor } from "../helpers/wait.ts";
import { CompatClient } from "./client/client.ts";
import { picture } from "../vision/helpers.ts";
import { has, parseProm, sum } from "../observability/helpers/prom_text.ts";
import { recordFrames, wsUrl } from "../observability/helpers/ws.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const QUERY = "where do cats sleep";
const DOCS = ["cats sleep on the warm mat", "the stock market fell", "dogs play in the park"];
const LISTS = ["entities", "relations", "classifications", "objects"];

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return await json(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** Every extract result carries the four lists; `filled` may be non-empty, the rest are. */
function assertLists(item: Json, filled: string[], what: string): void {
  for (const list of LISTS) {
    assert.ok(Array.isArray(item[list]), `${what}: ${list} is a list`);
    if (!filled.includes(list)) assert.equal(item[list].length, 0, `${what}: ${list} empty`);
  }
}

Deno.test({
  name: "compat: cohere-ai, openai and SIE clients through the router and on the worker",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    let router: Proc | undefined;
    let worker: Proc | undefined;
    try {
      const r = await startRouterProc("clients-router", {
        // The Cohere and OpenAI SDKs send no pool header: the default pool serves them.
        SVC_DEFAULT_MACHINE_PROFILE: "cpu",
        SVC_MACHINE_PROFILES: "cpu,l4",
        SVC_EMBEDDINGS_WAIT_MS: "300",
      });
      router = r.proc;
      worker = await startWorkerProc("clients-cpu", r.url, { SVC_MACHINE_PROFILE: "cpu" });
      await waitFor(async () => (await workerIds(r.url)).length === 1, "the worker", 60_000);
      const health = await json(`${r.url}/health`);
      const workerUrl = (health.body.workers as { url: string }[])[0].url;

      for (const [target, base] of [["router", r.url], ["worker", workerUrl]]) {
        await t.step(`cohere-ai rerank equals /v1/score (${target})`, async () => {
          const v2 = new CohereClientV2({ token: "unused", environment: base, maxRetries: 0 });
          const v1 = new CohereClient({ token: "unused", environment: base, maxRetries: 0 });
          for (const model of ["fixture/reranker", "fixture/dense"]) {
            const native = await post(`${base}/v1/score/${model}`, {
              query: { text: QUERY },
              items: DOCS.map((text) => ({ text })),
            });
            assert.equal(native.status, 200, JSON.stringify(native.body));
            const want = (native.body.scores as Json[]).map((e) => ({
              index: Number(e.item_id.slice("item-".length)),
              score: e.score,
            }));
            const a = await v2.rerank({ model, query: QUERY, documents: DOCS });
            assert.deepEqual(
              a.results.map((x) => [x.index, x.relevanceScore]),
              want.map((x) => [
                x.index,
                x.score,
              ]),
            );
            const b = await v1.rerank({ model, query: QUERY, documents: DOCS, topN: 1 });
            assert.deepEqual(b.results.map((x) => [x.index, x.relevanceScore]), [[
              want[0].index,
              want[0].score,
            ]]);
          }
        });

        await t.step(`cohere-ai embed equals /v1/encode (${target})`, async () => {
          const v2 = new CohereClientV2({ token: "unused", environment: base, maxRetries: 0 });
          const v1 = new CohereClient({ token: "unused", environment: base, maxRetries: 0 });
          const encode = async (params: Json) =>
            ((await post(`${base}/v1/encode/fixture/dense`, {
              items: DOCS.map((text) => ({ text })),
              params,
            })).body.items as Json[]).map((it) => it.dense.values);
          const a = await v2.embed({
            model: "fixture/dense",
            texts: DOCS,
            inputType: "search_query",
            embeddingTypes: ["float", "int8", "ubinary"],
            outputDimension: 16,
          });
          const query = { input_type: "query", dimensions: 16 };
          assert.deepEqual(a.embeddings.float, await encode({ options: query }));
          assert.deepEqual(
            a.embeddings.int8,
            await encode({ options: query, output_dtype: "int8" }),
          );
          assert.deepEqual(
            a.embeddings.ubinary,
            await encode({ options: query, output_dtype: "ubinary" }),
          );
          const b = await v1.embed({
            model: "fixture/dense",
            texts: DOCS,
            inputType: "search_document",
          });
          assert.deepEqual(b.embeddings, await encode({ options: { input_type: "document" } }));
        });

        await t.step(`openai: the real error message, models.list() (${target})`, async () => {
          const client = new OpenAI({ apiKey: "unused", baseURL: `${base}/v1`, maxRetries: 0 });
          const err = await client.embeddings.create({ model: "fixture/nope", input: "a" }).then(
            () => assert.fail("an unknown model is an error"),
            (e) => e,
          );
          assert.equal(err.status, 404);
          assert.match(err.message, /fixture\/nope/);
          assert.doesNotMatch(err.message, /no body/);
          const ids: string[] = [];
          for await (const m of client.models.list()) ids.push(m.id);
          assert.ok(ids.includes("fixture/dense") && ids.includes("fixture/reranker"), `${ids}`);
        });

        await t.step(
          `SIE client: classification, detection, relations carry every list (${target})`,
          async () => {
            const client = new CompatClient({
              baseUrl: base,
              version: VERSION,
              machineProfile: "cpu",
            });
            const cls = await client.extract("fixture/nli", [{
              id: "a",
              text: "the match ended 2-1",
            }, {
              text: "parliament voted today",
            }], { labels: ["sports", "politics"] });
            const clsItems = cls.items as Json[];
            assert.deepEqual(clsItems.map((it) => it.id), ["a", "item-1"]);
            clsItems.forEach((it, i) => {
              assertLists(it, ["classifications"], `classification ${i}`);
              assert.equal(it.classifications.length, 2);
            });

            const image = await picture(96, 64, "png", 1);
            const det = await client.extract("fixture/detr", [{
              images: [{ data: image, format: "png" }],
            }], {
              options: { threshold: 0 },
            });
            const detItem = (det.items as Json[])[0];
            assert.equal(detItem.id, "item-0");
            assertLists(detItem, ["objects"], "detection");
            assert.ok(detItem.objects.length > 0, "threshold 0 keeps objects");

            // Relations with the entity types in each item's metadata, as the SIE clients send them.
            const rel = await client.extract("fixture/gliner-multitask", [{
              text: "Alice lives in Paris and works for Google with Bob.",
              metadata: { entity_labels: ["person", "organization", "location"] },
            }], { labels: ["works for", "lives in"], options: { threshold: 0.3 } });
            const relItem = (rel.items as Json[])[0];
            assert.equal(relItem.id, "item-0");
            assertLists(relItem, ["entities", "relations"], "relations");
            assert.ok(relItem.entities.length > 0, "entities found");
            for (const x of relItem.relations) {
              assert.deepEqual(Object.keys(x).sort(), ["head", "relation", "score", "tail"]);
            }

            const scored = await client.score("fixture/reranker", { text: QUERY }, [
              { text: DOCS[0] },
              { id: "b", text: DOCS[1] },
            ]);
            assert.deepEqual((scored.scores as Json[]).map((e) => e.item_id).sort(), [
              "b",
              "item-0",
            ]);
          },
        );
      }

      await t.step("SIE client: getCapacity(gpu) from the gateway's /health workers", async () => {
        const client = new CompatClient({ baseUrl: r.url, version: VERSION });
        assert.equal(await client.capacity("cpu"), 1);
        assert.equal(await client.capacity("l4"), 0);
      });

      await t.step(
        "the router's /metrics has the worker's seven series, from its status",
        async () => {
          const series = async (base: string) =>
            parseProm(await (await fetch(`${base}/metrics`)).text());
          const dense = { model: "fixture/dense" };
          const own = await series(workerUrl);
          const tokens = sum(own, "svc_tokens_processed_total", dense);
          const batches = sum(own, "svc_batch_size_count", dense);
          assert.ok(tokens > 0 && batches > 0, "the worker ran fixture/dense");
          // The next status frames bring the worker's totals (no request runs meanwhile).
          let fleet = await series(r.url);
          await waitFor(
            async () => {
              fleet = await series(r.url);
              return sum(fleet, "svc_tokens_processed_total", dense) === tokens;
            },
            "the worker's tokens on the router",
            20_000,
          );
          assert.equal(sum(fleet, "svc_batch_size_count", dense), batches);
          assert.equal(
            sum(fleet, "svc_batch_size_sum", dense),
            sum(own, "svc_batch_size_sum", dense),
          );
          assert.equal(sum(fleet, "svc_model_loaded", { ...dense, device: "cpu" }), 1);
          const memory = sum(own, "svc_model_memory_bytes", { ...dense, device: "cpu" });
          assert.ok(memory > 0);
          assert.equal(sum(fleet, "svc_model_memory_bytes", { ...dense, device: "cpu" }), memory);
          assert.ok(has(fleet, "svc_queue_depth", dense));
          for (const name of ["svc_requests_total", "svc_request_duration_seconds_count"]) {
            assert.ok(has(fleet, name, dense), name);
          }
        },
      );

      await t.step(
        "the router's /ws/status: every ~200 ms, real device and memory, qps",
        async () => {
          const stream = recordFrames(wsUrl(r.url, "/ws/status"));
          try {
            await stream.opened;
            await waitFor(() => stream.frames.length >= 5, "five status frames", 10_000);
            const frames = stream.frames.slice(0, 5).map((f) => JSON.parse(f.data) as Json);
            // Once a second before: five frames took at least 4 s.
            const span = frames[4].timestamp - frames[0].timestamp;
            assert.ok(span < 3, `five frames within ${span} s`);
            const dense = frames[4].models.find((m: Json) => m.name === "fixture/dense");
            assert.equal(dense.device, "cpu");
            assert.ok(dense.memory_bytes > 0);
            // Requests forwarded now show in the rate (over the last seconds).
            for (let i = 0; i < 5; i++) {
              const res = await post(`${r.url}/v1/encode/fixture/dense`, {
                items: [{ text: "x" }],
              });
              assert.equal(res.status, 200);
            }
            await waitFor(
              () => JSON.parse(stream.frames.at(-1)!.data).cluster.total_qps > 0,
              "a positive total_qps",
              10_000,
            );
            assert.deepEqual(
              frames[4].workers.map((w: Json) => [w.id, w.gpu, w.healthy, typeof w.qps]),
              [["clients-cpu", "cpu", true, "number"]],
            );
          } finally {
            await stream.close();
          }
        },
      );

      await t.step(
        "a Cohere call for a pool with no worker waits, then 503 in Cohere's envelope",
        async () => {
          const res: Json = await post(`${r.url}/v2/embed`, {
            model: "fixture/dense",
            texts: ["a"],
            input_type: "search_query",
          }, { "x-sie-pool": "l4" });
          assert.equal(res.status, 503);
          assert.equal(res.headers.get("retry-after") !== null, true);
          assert.equal(res.body.detail.code, "NO_CAPACITY");
          assert.equal(res.body.message, res.body.detail.message);
          assert.match(res.body.message, /pool "l4"/);
        },
      );
    } finally {
      await stopAll([worker, router]);
    }
  },
});
