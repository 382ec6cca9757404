/** Which requests the worker serves as model operations without its app (server/model_routes.ts). */
import assert from "node:assert/strict";
import { MODEL_ROUTES, modelRouteOf, pathnameOf } from "#worker/server/model_routes.ts";
import { rawHeaderValue } from "@svc/shared/http/direct_call";

Deno.test("model routes: POST on the model-operation paths, as Hono's patterns match them", () => {
  const cases: [string, string, string | undefined][] = [
    ["POST", "/v1/encode/org/name", "/v1/encode/*"],
    ["POST", "/v1/encode/org%2Fname", "/v1/encode/*"],
    ["POST", "/v1/encode", "/v1/encode/*"],
    ["POST", "/v1/encode/", "/v1/encode/*"],
    ["POST", "/v1/score/m", "/v1/score/*"],
    ["POST", "/v1/extract/m", "/v1/extract/*"],
    ["POST", "/v1/embeddings", "/v1/embeddings"],
    ["POST", "/v1/embeddings/", undefined],
    ["POST", "/v1/rerank", "/v1/rerank"],
    ["POST", "/v2/rerank", "/v2/rerank"],
    ["POST", "/v1/embed", "/v1/embed"],
    ["POST", "/v2/embed", "/v2/embed"],
    ["POST", "/v2/embed/x", undefined],
    ["POST", "/v2/embeddings", undefined],
    ["GET", "/v2/rerank", undefined],
    ["POST", "/v1/encodex/m", undefined],
    ["POST", "/v1/models", undefined],
    ["GET", "/v1/encode/m", undefined],
    ["HEAD", "/v1/embeddings", undefined],
  ];
  for (const [method, path, want] of cases) {
    assert.equal(modelRouteOf(method, path)?.path, want, `${method} ${path}`);
  }
  assert.ok(MODEL_ROUTES.every((r) => r.method === "POST"));
});

Deno.test("model routes: the path is read as URL.pathname reads it", () => {
  for (
    const url of [
      "http://h:1/v1/embeddings",
      "http://h/v1/encode/org%2Fname?x=1",
      "http://h/v1/embeddings#a?b",
      "http://h/v1/encode/a?b#c",
      "http://h//v1/encode/x",
      "foo://h/v1/score/m",
    ]
  ) {
    assert.equal(pathnameOf(url), new URL(url).pathname, url);
  }
});

Deno.test("raw header values read as Headers.get reads them", () => {
  const raw = ["Content-Type", " application/json\t", "X-A", "1", "x-a", "2", "Accept", ""];
  assert.equal(rawHeaderValue(raw, "content-type"), "application/json");
  assert.equal(rawHeaderValue(raw, "x-a"), "1, 2");
  assert.equal(rawHeaderValue(raw, "accept"), "");
  assert.equal(rawHeaderValue(raw, "authorization"), undefined);
  assert.equal(rawHeaderValue(raw, "Content-Type"), "application/json", "any case of the name");
  const h = new Headers([["X-A", "1"], ["x-a", "2"], ["Content-Type", " application/json\t"]]);
  assert.equal(h.get("x-a"), rawHeaderValue(raw, "x-a"));
  assert.equal(h.get("content-type"), rawHeaderValue(raw, "content-type"));
});
