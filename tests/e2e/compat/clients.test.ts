/**
 * The clients people already run, unchanged, against a real router and worker (processes on
 * 127.0.0.1), and against the worker directly:
 *
 * - the `cohere-ai` SDK (`CohereClientV2`, `CohereClient` with `environment` set to the service):
 *   rerank equals /v1/score, embed equals /v1/encode (input types, embedding types, Matryoshka);
 *   with no worker for the pool, a Cohere call waits, then gets 503 with Cohere's `message`;
 * - the `openai` SDK: the real message of an error, `models.list()`;
 * - the SIE-style client (tests/compat/client): classification, detection and relation results
 *   carry every list in the shape the SIE clients read, id-less items come back as `item-{i}`,
 *   images go as bare bytes and the threshold as `params.threshold` (as the TypeScript client
 *   sends them), relations are asked with the entities in item metadata, `getCapacity(gpu)` reads
 *   the gateway's `/health`, the pool calls (`createPool`, `getPool`, renewal, `deletePool`,
 *   `gpu: "pool/gpu"`) answer or fail with a message, and every status stream (the worker's
 *   `/ws/status`, the router's `/ws/status` and `/ws/cluster-status`) carries the fields the
 *   clients type (tests/compat/client/sie_shapes.ts).
 */
import assert from "node:assert/strict";
import { CohereClient, CohereClientV2 } from "cohere-ai";
import OpenAI from "openai";
import { VERSION } from "@svc/shared/version";
import {
  json,
  listeningUrl,
  type Proc,
  startRouterProc,
  startWorkerProc,
  stopAll,
  workerIds,
} from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";
import { CompatClient } from "../../compat/client/client.ts";
import { picture } from "../../vision/helpers.ts";
import { has, parseProm, sum } from "../../observability/helpers/prom_text.ts";
import { recordFrames, wsUrl } from "../../observability/helpers/ws.ts";
import {
  assertShape,
  CAPACITY_HEALTH,
  CLUSTER_STATUS_MESSAGE,
  EXTRACT_RESULT,
  POOL_INFO,
  POOL_LIST_ITEM,
  SCORE_RESULT,
  WORKER_STATUS_MESSAGE,
} from "../../compat/client/sie_shapes.ts";

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
      // The worker's own port: the router reaches it over its connection and lists no URL.
      const workerUrl = await listeningUrl(worker!);

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
              assertShape(it, EXTRACT_RESULT, `classification ${i}`);
              assertLists(it, ["classifications"], `classification ${i}`);
              assert.equal(it.classifications.length, 2);
            });

            // As the TypeScript client sends them: images as bare bytes, params.threshold.
            const image = await picture(96, 64, "png", 1);
            const det = await client.extract("fixture/detr", [{ images: [image] }], {
              labels: [],
              threshold: 0,
            });
            const detItem = (det.items as Json[])[0];
            assert.equal(detItem.id, "item-0");
            assertShape(detItem, EXTRACT_RESULT, "detection");
            assertLists(detItem, ["objects"], "detection");
            assert.ok(detItem.objects.length > 0, "threshold 0 keeps objects");
            const strict = await client.extract("fixture/detr", [{
              images: [{ data: image, format: "png" }],
            }], { options: { threshold: 0 } });
            assert.deepEqual((strict.items as Json[])[0].objects, detItem.objects);

            // Relations as the SIE clients ask them: relation types in params.labels, each item's
            // entities (from an earlier NER call) in its metadata.
            const text = "Alice lives in Paris and works for Google with Bob.";
            const mentions = ["Alice", "Paris", "Google", "Bob"].map((t) => ({
              text: t,
              label: t === "Google" ? "ORG" : t === "Paris" ? "LOC" : "PER",
              start: text.indexOf(t),
              end: text.indexOf(t) + t.length,
            }));
            const rel = await client.extract("fixture/gliner-multitask", [{
              text,
              metadata: { entities: mentions },
            }], { labels: ["works for", "lives in"], options: { threshold: 0 } });
            const relItem = (rel.items as Json[])[0];
            assert.equal(relItem.id, "item-0");
            assertShape(relItem, EXTRACT_RESULT, "relations");
            assertLists(relItem, ["entities", "relations"], "relations");
            assert.deepEqual(relItem.entities, mentions.map((m) => ({ ...m, score: 1 })));
            assert.ok(relItem.relations.length > 0, "threshold 0 relates the mentions");
            const named = new Set(mentions.map((m) => m.text));
            for (const x of relItem.relations) {
              assert.ok(named.has(x.head) && named.has(x.tail), `${x.head} → ${x.tail}`);
            }
            // Our own form beside it: entity types to find first.
            const typed = await client.extract("fixture/gliner-multitask", [{
              text,
              metadata: { entity_labels: ["person", "organization", "location"] },
            }], { labels: ["works for", "lives in"], options: { threshold: 0.3 } });
            assertShape((typed.items as Json[])[0], EXTRACT_RESULT, "relations by types");

            const scored = await client.score("fixture/reranker", { text: QUERY }, [
              { text: DOCS[0] },
              { id: "b", text: DOCS[1] },
            ]);
            assertShape(scored, SCORE_RESULT, "score");
            assert.deepEqual((scored.scores as Json[]).map((e) => e.item_id).sort(), [
              "b",
              "item-0",
            ]);
          },
        );
      }

      await t.step("SIE client: getCapacity(gpu) from the gateway's /health workers", async () => {
        const client = new CompatClient({ baseUrl: r.url, version: VERSION });
        assertShape((await json(`${r.url}/health`)).body, CAPACITY_HEALTH, "/health");
        assert.equal(await client.capacity("cpu"), 1);
        assert.equal(await client.capacity("l4"), 0);
        const all = await client.getCapacity();
        assert.deepEqual(
          [all.status, all.workerCount, all.gpuCount, all.liveGpuTypes],
          ["healthy", 1, 0, ["cpu"]],
        );
        assert.ok(all.modelsLoaded >= 1, "the models the steps above loaded");
        const cpu = await client.getCapacity("CPU");
        assert.deepEqual(cpu.workers.map((w) => [w.url, w.gpu, w.healthy]), [[
          "",
          "cpu",
          true,
        ]]);
        assert.equal((await client.getCapacity("l4")).workerCount, 0);
        // On a worker, getCapacity() is refused: it is not a gateway.
        const onWorker = new CompatClient({ baseUrl: workerUrl, version: VERSION });
        await assert.rejects(() => onWorker.getCapacity(), /requires a gateway/);
      });

      await t.step('SIE client: the pool calls and gpu "pool/gpu" through the router', async () => {
        const client = new CompatClient({ baseUrl: r.url, version: VERSION });
        const created = await client.createPool("cpu", { cpu: 1 });
        assertShape(created, POOL_INFO, "createPool's answer");
        const pool = await client.getPool("cpu");
        assertShape(pool, POOL_INFO, "getPool");
        assert.deepEqual((pool as Json).status.assigned_workers, [
          { name: "clients-cpu", url: "", gpu: "cpu" },
        ]);
        assert.equal((pool as Json).status.state, "active");
        assert.equal(await client.getPool("eval-bench"), null, "an unknown pool reads as null");
        assert.equal(await client.renewPool("cpu"), true, "the lease renewal is taken");
        await assert.rejects(
          () => client.createPool("eval-bench", { l4: 2 }),
          /Failed to create pool 'eval-bench': .*SVC_MACHINE_PROFILES/,
        );
        const del = await client.deletePool("cpu");
        assert.equal(del.status, 501);
        assert.match(del.message ?? "", /cannot be deleted at run time/);
        const list = await json(`${r.url}/v1/pools`);
        for (const p of list.body.pools as Json[]) assertShape(p, POOL_LIST_ITEM, p.name);
        // gpu: "cpu/cpu" is X-SIE-Pool: cpu with X-SIE-MACHINE-PROFILE: cpu.
        const pooled = new CompatClient({
          baseUrl: r.url,
          version: VERSION,
          pool: "cpu",
          machineProfile: "cpu",
        });
        const enc = await pooled.encode("fixture/dense", [{ text: "x" }]);
        assert.equal((enc.items as Json[]).length, 1);
        const wrong = new CompatClient({
          baseUrl: r.url,
          version: VERSION,
          pool: "cpu",
          machineProfile: "l4",
        });
        const err = await wrong.encode("fixture/dense", [{ text: "x" }]).then(
          () => assert.fail("a GPU type the pool does not run is refused"),
          (e) => e,
        );
        assert.equal(err.status, 400);
        assert.match(err.message, /X-SIE-Pool "cpu" and X-SVC-MACHINE-PROFILE "l4" disagree/);
      });

      await t.step("status streams carry the fields the SIE clients type", async () => {
        const read = async (url: string): Promise<Json> => {
          const stream = recordFrames(url);
          try {
            await stream.opened;
            await waitFor(() => stream.frames.length > 0, `a frame from ${url}`, 10_000);
            return JSON.parse(stream.frames[0].data);
          } finally {
            await stream.close();
          }
        };
        const own = await read(wsUrl(workerUrl, "/ws/status"));
        assertShape(own, WORKER_STATUS_MESSAGE, "the worker's /ws/status");
        assert.deepEqual(
          [own.name, own.machine_profile, own.pool_name, own.bundle, own.gpu_count, own.ready],
          ["clients-cpu", "cpu", "cpu", "default", 0, true],
        );
        const dense = own.models.find((m: Json) => m.name === "fixture/dense");
        assert.deepEqual([dense.config.adapter, dense.config.inputs], ["dense", ["text"]]);
        const fleet = await read(wsUrl(r.url, "/ws/status"));
        assertShape(fleet, WORKER_STATUS_MESSAGE, "the router's /ws/status");
        assertShape(fleet, CLUSTER_STATUS_MESSAGE, "the router's /ws/status");
        const cluster = await read(wsUrl(r.url, "/ws/cluster-status"));
        assertShape(cluster, CLUSTER_STATUS_MESSAGE, "/ws/cluster-status");
        assert.equal(cluster.cluster.worker_count, 1);
        const summary = cluster.models.find((m: Json) => m.name === "fixture/dense");
        assert.deepEqual(
          [summary.state, summary.worker_count, summary.gpu_types],
          ["loaded", 1, ["cpu"]],
        );
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
