/** The operations table (shared/operations.ts) and what derives from it: labels, dialects, routes. */
import assert from "node:assert/strict";
import {
  apiRoutesOf,
  BODY_MODEL_PATHS,
  exactOperationOf,
  operationOfPath,
  OPERATIONS,
  PATH_MODEL_OPS,
} from "@svc/shared/operations";
import { apiEndpointOf } from "@svc/shared/status/request_series";
import { errorDialectOf } from "@svc/shared/errors";
import { MODEL_ROUTES } from "#worker/server/model_routes.ts";

Deno.test("operations: names and paths are unique", () => {
  assert.equal(new Set(OPERATIONS.map((o) => o.name)).size, OPERATIONS.length);
  assert.equal(new Set(OPERATIONS.map((o) => o.path)).size, OPERATIONS.length);
});

Deno.test("operations: the endpoint label of each model-operation path", () => {
  const cases: [string, string | undefined][] = [
    ["/v1/encode/org/name", "encode"],
    ["/v1/encode", "encode"],
    ["/v1/score/m", "score"],
    ["/v1/extract/m", "extract"],
    ["/v1/embeddings", "embeddings"],
    ["/v1/rerank", "rerank"],
    ["/v2/rerank", "rerank"],
    ["/v1/embed", "embed"],
    ["/v2/embed", "embed"],
    ["/v1/encodex/m", undefined],
    ["/v2/embed/x", undefined],
    ["/v1/models", undefined],
    ["/healthz", undefined],
  ];
  for (const [path, want] of cases) assert.equal(apiEndpointOf(path), want, path);
});

Deno.test("operations: the error dialect of a path", () => {
  assert.equal(errorDialectOf("/v1/embeddings"), "openai");
  for (const p of ["/v1/rerank", "/v2/rerank", "/v1/embed", "/v2/embed"]) {
    assert.equal(errorDialectOf(p), "cohere", p);
  }
  for (const p of ["/v1/encode/m", "/v1/models", "/v3/embed"]) {
    assert.equal(errorDialectOf(p), "native", p);
  }
});

Deno.test("operations: path-model kinds, body-model paths and each API's routes", () => {
  assert.deepEqual(PATH_MODEL_OPS, ["encode", "score", "extract"]);
  assert.deepEqual(BODY_MODEL_PATHS, [
    "/v1/embeddings",
    "/v1/rerank",
    "/v2/rerank",
    "/v1/embed",
    "/v2/embed",
  ]);
  assert.deepEqual(apiRoutesOf("cohere_v2"), { score: "/v2/rerank", encode: "/v2/embed" });
  assert.deepEqual(apiRoutesOf("openai"), { encode: "/v1/embeddings" });
  assert.equal(exactOperationOf("/v1/encode/m"), undefined, "a pattern is not an exact path");
  assert.equal(operationOfPath("/v1/encode/")?.name, "encode");
});

Deno.test("operations: the worker serves each one at its path", () => {
  assert.deepEqual(
    MODEL_ROUTES.map((r) => [r.method, r.path]),
    OPERATIONS.map((o) => [o.method, o.path]),
  );
});
