/**
 * The model operations, written once: every route that runs a model, with what the router, the
 * worker, the metrics and the error envelopes need to know of it. The router's and the worker's
 * routes, the `endpoint` label, the error dialect of a path and the operation unions derive from
 * {@link OPERATIONS}; a new route added here is missing a worker handler until the compiler says so.
 */
import type { ErrorDialect } from "./errors.ts";

/** What a model does for an operation (the family's operation, worker/families/kinds.ts). */
export type OpKind = "encode" | "score" | "extract";

/** One model operation's route. */
export interface OperationSpec {
  /** The operation's own name (a worker handler is keyed by it). */
  readonly name: string;
  readonly method: "POST";
  /** Hono's pattern syntax: `/x/*` also matches `/x` itself. */
  readonly path: string;
  readonly kind: OpKind;
  /** The error envelope its clients read. */
  readonly dialect: ErrorDialect;
  /** Where the model is named: the path (`/v1/encode/{model}`) or the body's `model` field. */
  readonly model: "path" | "body";
  /** The `endpoint` label of its metrics and access log (one per operation of an API). */
  readonly endpoint: string;
  /** The API it belongs to: a hint for a model of another kind names a route of the same API. */
  readonly api: string;
}

/** The model operations; the order is the order routes are registered in. */
export const OPERATIONS = [
  op("encode", "/v1/encode/*", "encode", "path", "native"),
  op("score", "/v1/score/*", "score", "path", "native"),
  op("extract", "/v1/extract/*", "extract", "path", "native"),
  op("embeddings", "/v1/embeddings", "encode", "body", "openai"),
  // Cohere's API (both versions, one label each), for the clients that speak it.
  op("rerank_v1", "/v1/rerank", "score", "body", "cohere", "rerank", "cohere_v1"),
  op("rerank_v2", "/v2/rerank", "score", "body", "cohere", "rerank", "cohere_v2"),
  op("embed_v1", "/v1/embed", "encode", "body", "cohere", "embed", "cohere_v1"),
  op("embed_v2", "/v2/embed", "encode", "body", "cohere", "embed", "cohere_v2"),
] as const;

/** One entry of {@link OPERATIONS}, its literal types kept. */
export type Operation = typeof OPERATIONS[number];
/** The name of a model operation. */
export type OperationName = Operation["name"];
/** The kinds of the operations naming their model in the path (`/v1/{kind}/{model}`). */
export type PathModelOp = Extract<Operation, { model: "path" }>["kind"];
/** The kinds of the operations naming their model in the body. */
export type BodyModelOp = Extract<Operation, { model: "body" }>["kind"];

/** The path-model operations, in table order. */
export const PATH_MODEL_OPS: readonly PathModelOp[] = OPERATIONS.flatMap((o) =>
  o.model === "path" ? [o.kind] : []
);

/** The paths of the body-model operations, in table order. */
export const BODY_MODEL_PATHS: readonly string[] = OPERATIONS.flatMap((o) =>
  o.model === "body" ? [o.path] : []
);

/** The operation of exactly `path` for exact routes, or of `/x` and `/x/...` for `/x/*` routes. */
export function operationOfPath(path: string): Operation | undefined {
  for (const o of OPERATIONS) {
    if (!o.path.endsWith("/*")) {
      if (path === o.path) return o;
      continue;
    }
    const base = o.path.slice(0, -2);
    if (path === base || path.startsWith(`${base}/`)) return o;
  }
  return undefined;
}

/** The operation at exactly `path` (an exact route), if one is. */
export function exactOperationOf(path: string): Operation | undefined {
  return OPERATIONS.find((o) => o.path === path);
}

/** The routes of `api`, by operation kind (the first route of each kind). */
export function apiRoutesOf(api: string): Partial<Record<OpKind, string>> {
  const out: Partial<Record<OpKind, string>> = {};
  for (const o of OPERATIONS) if (o.api === api && out[o.kind] === undefined) out[o.kind] = o.path;
  return out;
}

/** One table row; `endpoint` defaults to the name and `api` to the dialect. */
function op<
  const N extends string,
  const P extends string,
  const K extends OpKind,
  const M extends "path" | "body",
  const D extends ErrorDialect,
  const E extends string = N,
>(
  name: N,
  path: P,
  kind: K,
  model: M,
  dialect: D,
  endpoint?: E,
  api?: string,
): OperationSpec & { name: N; path: P; kind: K; model: M; dialect: D; endpoint: E } {
  return {
    name,
    method: "POST",
    path,
    kind,
    model,
    dialect,
    endpoint: (endpoint ?? name) as E,
    api: api ?? dialect,
  };
}
