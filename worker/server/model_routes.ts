/**
 * The model operations (POST /v1/encode/{model}, /v1/score/{model}, /v1/extract/{model},
 * /v1/embeddings, and Cohere's /v1|v2/rerank and /v1|v2/embed), served as direct requests
 * (shared/http/direct_call.ts), the one handler behind both transports (the HTTP server and the
 * router connection, serve_request.ts): the worker's hot path skips the fetch `Request`, Hono and
 * the `Response` (measured: 0.23-0.50 ms per request at concurrency 1, docs/bench/README.md).
 * They pass the same steps as every other request (pipeline.ts: version headers, browser rules,
 * API key, drain gate and record), in the same order; a route's failure is answered as the app's
 * are (failure.ts: the API error, or 499 for a client gone).
 */
import { type ErrorDialect, errorDialectOf } from "@svc/shared/errors";
import {
  type DirectAnswer,
  directAnswerKit,
  type DirectHandler,
  type DirectRequest,
  errorAnswer,
} from "@svc/shared/http/direct_call";
import { readSourceLimited } from "@svc/shared/http/read_body";
import { type OperationName, OPERATIONS } from "@svc/shared/operations";
import { runSteps } from "@svc/shared/http/steps";
import { RegExpRouter } from "hono/router/reg-exp-router";
import type { WorkerContext } from "./context.ts";
import { CLIENT_CLOSED, failureOf } from "./failure.ts";
import type { ModelCall, RequestFacts } from "./model_call.ts";
import type { WorkerRequest, WorkerSteps } from "./pipeline.ts";
import { handleEncode } from "./routes/encode.ts";
import { handleEmbeddings } from "./routes/embeddings.ts";
import { handleScore } from "./routes/score.ts";
import { handleExtract } from "./routes/extract.ts";
import { handleCohereEmbed, handleCohereRerank } from "./routes/cohere.ts";

/** A model-operation route: its path (Hono's pattern syntax, for 405 answers) and handler. */
export interface ModelRoute {
  readonly method: "POST";
  readonly path: string;
  handle(ctx: WorkerContext, call: ModelCall): Promise<DirectAnswer>;
}

/** Each operation's handler, by its name in the operations table (one for every operation). */
const HANDLERS: Record<OperationName, ModelRoute["handle"]> = {
  encode: handleEncode,
  score: handleScore,
  extract: handleExtract,
  embeddings: handleEmbeddings,
  rerank_v1: (ctx, call) => handleCohereRerank(ctx, call, 1),
  rerank_v2: (ctx, call) => handleCohereRerank(ctx, call, 2),
  embed_v1: (ctx, call) => handleCohereEmbed(ctx, call, 1),
  embed_v2: (ctx, call) => handleCohereEmbed(ctx, call, 2),
};

/** The model operations (shared/operations.ts), each with its handler. */
export const MODEL_ROUTES: readonly ModelRoute[] = OPERATIONS.map((o) => ({
  method: o.method,
  path: o.path,
  handle: HANDLERS[o.name],
}));

/** The model routes in Hono's own router: matched exactly as the app would match them. */
const ROUTER = (() => {
  const router = new RegExpRouter<ModelRoute>();
  for (const r of MODEL_ROUTES) router.add(r.method, r.path, r);
  return router;
})();

/** The route serving `method` at `path`, if one does. */
export function modelRouteOf(method: string, path: string): ModelRoute | undefined {
  return ROUTER.match(method, path)[0][0]?.[0];
}

/** The pathname of a URL as `Request.url` spells it (scheme://authority/path?query). */
export function pathnameOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  let end = url.length;
  for (const mark of ["?", "#"]) {
    const at = url.indexOf(mark, start);
    if (at >= 0 && at < end) end = at;
  }
  return url.slice(start, end);
}

/** The direct handler serving {@link MODEL_ROUTES} behind `steps`; other requests go to the app. */
export function modelRouteHandler(ctx: WorkerContext, steps: WorkerSteps): DirectHandler {
  return (req) => {
    const path = pathnameOf(req.url);
    const route = modelRouteOf(req.method, path);
    if (!route) return undefined;
    // The compatible routes answer errors in their clients' envelope.
    const dialect = errorDialectOf(path);
    const facts: RequestFacts = {};
    const view: WorkerRequest = { method: req.method, path, header: req.header, facts };
    const handle = () =>
      route.handle(ctx, callOf(ctx, req, facts)).catch((err) =>
        failureAnswer(ctx, err, req, path, dialect)
      );
    // A step's own failure (not the route's) is answered the same way.
    return runSteps(steps, view, directAnswerKit(dialect), handle).catch((err) =>
      failureAnswer(ctx, err, req, path, dialect)
    );
  };
}

/** The answer to a request whose handling threw: the API error, or 499 for a client gone. */
function failureAnswer(
  ctx: WorkerContext,
  err: unknown,
  req: DirectRequest,
  path: string,
  dialect: ErrorDialect,
): DirectAnswer {
  const se = failureOf(ctx, err, req.signal.aborted, { method: req.method, path });
  return se
    ? errorAnswer(se, {}, dialect)
    : { status: CLIENT_CLOSED, headers: {}, body: new Uint8Array() };
}

/** The route's view of a direct request. */
function callOf(ctx: WorkerContext, req: DirectRequest, facts: RequestFacts): ModelCall {
  return {
    url: req.url,
    header: req.header,
    signal: req.signal,
    readBody: () => readSourceLimited(req.body, req.header("content-length"), ctx.body),
    facts,
  };
}
