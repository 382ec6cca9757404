/**
 * Issue 35.3 and 35.4: the clients of other APIs, unchanged, against a router with one pool and
 * neither `SVC_DEFAULT_MACHINE_PROFILE` nor `SVC_MACHINE_PROFILES` (they send no profile header):
 * `openai` (embeddings in its default base64, `models.retrieve`, the request id it reports),
 * `cohere-ai` v1 and v2 (`inputs` included, text and image content), the request the `ai` SDK's
 * OpenAI provider sends (`encoding_format: "float"`), `x-request-id` on every answer (errors
 * included, the client's own echoed), an unknown model's 404 before any profile check, hints that
 * name the client's own route, and relations asked with `labels` alone (the SIE TypeScript SDK).
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { CohereClient, CohereClientV2 } from "cohere-ai";
import OpenAI from "openai";
import { json, type Proc, startRouterProc, startWorkerProc, stopAll, workerIds } from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";
import { picture } from "../../vision/helpers.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const DOCS = ["cats sleep on the warm mat", "the stock market fell"];

async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Json> {
  return await json(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

Deno.test({
  name: "compat: openai, cohere-ai and the ai SDK's request work with one pool and no default",
  fn: async (t) => {
    let router: Proc | undefined;
    let worker: Proc | undefined;
    try {
      const r = await startRouterProc("noprofile-router", { SVC_EMBEDDINGS_WAIT_MS: "300" });
      router = r.proc;
      worker = await startWorkerProc("noprofile-cpu", r.url, { SVC_MACHINE_PROFILE: "cpu" });
      await waitFor(async () => (await workerIds(r.url)).length === 1, "the worker", 60_000);
      const base = r.url;
      const encode = async (texts: string[], params: Json = {}) =>
        ((await post(`${base}/v1/encode/fixture/dense`, {
          items: texts.map((text) => ({ text })),
          params,
        }, { "x-svc-machine-profile": "cpu" })).body.items as Json[]).map((it) => it.dense.values);
      const native = await encode(DOCS);

      await t.step("openai: embeddings (base64), models.retrieve, the request id", async () => {
        const client = new OpenAI({ apiKey: "unused", baseURL: `${base}/v1`, maxRetries: 0 });
        const { data, response, request_id } = await client.embeddings
          .create({ model: "fixture/dense", input: DOCS }).withResponse();
        assert.equal(data.data.length, 2);
        data.data.forEach((e, i) =>
          e.embedding.forEach((x, j) => assert.ok(Math.abs(x - native[i][j]) < 1e-6))
        );
        assert.ok(request_id, "the SDK reads a request id");
        assert.equal(request_id, response.headers.get("x-request-id"));
        assert.equal(request_id, response.headers.get("x-trace-id"));
        const model = await client.models.retrieve("fixture/dense");
        assert.deepEqual(
          [model.id, model.object, model.owned_by, typeof model.created],
          ["fixture/dense", "model", "fixture", "number"],
        );
        const err = await client.embeddings.create({ model: "fixture/nope", input: "a" }).then(
          () => assert.fail("an unknown model is an error"),
          (e) => e,
        );
        assert.equal(err.status, 404, "an unknown model is a 404, not a profile 400");
        assert.match(err.message, /fixture\/nope/);
        assert.ok(err.requestID, "error answers carry x-request-id too");
      });

      await t.step("the ai SDK's OpenAI provider request (encoding_format float)", async () => {
        const res = await post(`${base}/v1/embeddings`, {
          model: "fixture/dense",
          input: DOCS,
          encoding_format: "float",
        }, { authorization: "Bearer unused" });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        (res.body.data as Json[]).forEach((e, i) =>
          (e.embedding as number[]).forEach((x, j) => assert.ok(Math.abs(x - native[i][j]) < 1e-6))
        );
      });

      await t.step("cohere-ai v1 and v2: embed (texts and inputs), rerank", async () => {
        const v2 = new CohereClientV2({ token: "unused", environment: base, maxRetries: 0 });
        const v1 = new CohereClient({ token: "unused", environment: base, maxRetries: 0 });
        const byTexts = await v2.embed({
          model: "fixture/dense",
          texts: DOCS,
          inputType: "search_document",
          embeddingTypes: ["float"],
        });
        const byInputs = await v2.embed({
          model: "fixture/dense",
          inputs: DOCS.map((text) => ({ content: [{ type: "text" as const, text }] })),
          inputType: "search_document",
          embeddingTypes: ["float"],
        });
        assert.deepEqual(byInputs.embeddings.float, byTexts.embeddings.float);
        assert.deepEqual(
          byTexts.embeddings.float,
          await encode(DOCS, { options: { input_type: "document" } }),
        );
        const old = await v1.embed({ model: "fixture/dense", texts: DOCS });
        assert.equal((old.embeddings as number[][]).length, 2);
        const ranked = await v2.rerank({
          model: "fixture/reranker",
          query: "cats",
          documents: DOCS,
        });
        assert.equal(ranked.results.length, 2);

        // Image content, for a model that takes images: the same vector as `images`.
        const uri = `data:image/png;base64,${
          Buffer.from(await picture(64, 48, "png", 2)).toString("base64")
        }`;
        const pic = await v2.embed({
          model: "fixture/clip",
          inputs: [{ content: [{ type: "image_url", imageUrl: { url: uri } }] }],
          inputType: "image",
          embeddingTypes: ["float"],
        });
        const same = await v2.embed({
          model: "fixture/clip",
          images: [uri],
          inputType: "image",
          embeddingTypes: ["float"],
        });
        assert.deepEqual(pic.embeddings.float, same.embeddings.float);
        // Image content for a text-only model: a 400 that names the input.
        const refused = await post(`${base}/v2/embed`, {
          model: "fixture/dense",
          inputs: [{ content: [{ type: "image_url", image_url: { url: uri } }] }],
        });
        assert.equal(refused.status, 400);
        assert.match(refused.body.detail.message, /inputs\[0\]/);
      });

      await t.step("x-request-id on every answer; the hint names the client's route", async () => {
        const own = await post(`${base}/v2/embed`, {
          model: "fixture/dense",
          texts: ["a"],
        }, { "x-request-id": "client-id-1" });
        assert.equal(own.status, 200);
        assert.equal(own.headers.get("x-request-id"), "client-id-1");
        assert.ok(own.headers.get("x-trace-id"));
        const wrong = await post(`${base}/v2/embed`, { model: "fixture/reranker", texts: ["a"] });
        assert.equal(wrong.status, 400);
        assert.match(wrong.body.detail.message, /use \/v2\/rerank, not \/v2\/embed/);
        assert.doesNotMatch(wrong.body.detail.message, /\/v1\/score/);
        assert.ok(wrong.headers.get("x-request-id"));
        assert.equal(wrong.headers.get("x-request-id"), wrong.headers.get("x-trace-id"));
        // A malformed id is not echoed; answers of the router's own carry ids too.
        const odd: Json = await json(`${base}/v1/nowhere`, { headers: { "x-request-id": "a b" } });
        assert.equal(odd.status, 404);
        assert.ok(odd.headers.get("x-trace-id"));
        assert.equal(odd.headers.get("x-request-id"), odd.headers.get("x-trace-id"));
        const health = await json(`${base}/healthz`);
        assert.ok(health.headers.get("x-request-id"));
      });

      await t.step("relations with labels only take the model's entity types", async () => {
        const res = await post(`${base}/v1/extract/fixture/gliner-multitask`, {
          items: [{ text: "Alice lives in Paris and works for Google with Bob." }],
          params: { labels: ["works for", "lives in"] },
        });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        const item = res.body.items[0];
        assert.ok(Array.isArray(item.entities) && Array.isArray(item.relations));
      });
    } finally {
      await stopAll([worker, router]);
    }
  },
});
