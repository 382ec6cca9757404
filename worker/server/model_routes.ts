/**
 * The model operations (POST /v1/encode/{model}, /v1/score/{model}, /v1/extract/{model},
 * /v1/embeddings, and Cohere's /v1|v2/rerank and /v1|v2/embed), served as direct requests
 * (shared/http/direct_call.ts): the worker's hot path skips the fetch `Request`, Hono and the
 * `Response`. Everything Hono's middleware does for the
 * other routes happens here too, through the same functions: the version headers, the API key,
 * the drain gate and in-flight count, error answers (499 for a client gone), the access log and
 * the request metrics.
 */
import { type ErrorDialect, errorDialectOf } from "@svc/shared/errors";
import {
  type DirectAnswer,
  type DirectHandler,
  type DirectRequest,
  errorAnswer,
} from "@svc/shared/http/direct_call";
import { readSourceLimited } from "@svc/shared/http/read_body";
import { browserProblem, corsHeaders } from "@svc/shared/http/browser_guard";
import { HeaderNames as H, serverVersionHeaders } from "@svc/shared/headers";
import { VERSION } from "@svc/shared/version";
import { type KeyCheck, unauthorized } from "./api_key.ts";
import type { WorkerContext } from "./context.ts";
import { CLIENT_CLOSED, failureOf, shuttingDown } from "./failure.ts";
import type { ModelCall, RequestFacts } from "./model_call.ts";
import { type FinishedRequest, recordRequest } from "./request_record.ts";
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

/** The model operations; `/x/*` also matches `/x` itself, as Hono's patterns do. */
export const MODEL_ROUTES: readonly ModelRoute[] = [
  { method: "POST", path: "/v1/encode/*", handle: handleEncode },
  { method: "POST", path: "/v1/score/*", handle: handleScore },
  { method: "POST", path: "/v1/extract/*", handle: handleExtract },
  { method: "POST", path: "/v1/embeddings", handle: handleEmbeddings },
  // Cohere's API (both versions), for the clients that speak it.
  { method: "POST", path: "/v1/rerank", handle: (ctx, call) => handleCohereRerank(ctx, call, 1) },
  { method: "POST", path: "/v2/rerank", handle: (ctx, call) => handleCohereRerank(ctx, call, 2) },
  { method: "POST", path: "/v1/embed", handle: (ctx, call) => handleCohereEmbed(ctx, call, 1) },
  { method: "POST", path: "/v2/embed", handle: (ctx, call) => handleCohereEmbed(ctx, call, 2) },
];

const VERSION_HEADERS = serverVersionHeaders(VERSION);

/** The route serving `method` at `path`, if one does. */
export function modelRouteOf(method: string, path: string): ModelRoute | undefined {
  for (const r of MODEL_ROUTES) {
    if (r.method !== method) continue;
    if (!r.path.endsWith("/*")) {
      if (path === r.path) return r;
      continue;
    }
    const base = r.path.slice(0, -2);
    if (path.startsWith(base) && (path.length === base.length || path[base.length] === "/")) {
      return r;
    }
  }
  return undefined;
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

/** The direct handler serving {@link MODEL_ROUTES}; every other request is left to the app. */
export function modelRouteHandler(
  ctx: WorkerContext,
  keyCheck: KeyCheck | undefined,
): DirectHandler {
  return (req) => {
    const path = pathnameOf(req.url);
    const route = modelRouteOf(req.method, path);
    if (!route) return undefined;
    // The compatible routes answer errors in their clients' envelope too.
    const dialect = errorDialectOf(path);
    // serve() answers every failure of the route; this is for one of its own steps.
    return serve(ctx, keyCheck, route, req, path, dialect).catch((err) =>
      versioned(failureAnswer(ctx, err, req, path, dialect))
    );
  };
}

/**
 * The key, the drain gate, the route, its failure, the record: Hono's middleware, in order. The
 * record is written once the answer is out (about 30 µs of metrics and log off the latency).
 */
async function serve(
  ctx: WorkerContext,
  keyCheck: KeyCheck | undefined,
  route: ModelRoute,
  req: DirectRequest,
  path: string,
  dialect: ErrorDialect,
): Promise<DirectAnswer> {
  const browser = ctx.settings.browser;
  const refused = browserProblem(req.method, req.header, browser);
  if (refused) return versioned(errorAnswer(refused));
  if (keyCheck && !await keyCheck(req.header("authorization"))) {
    return versioned(errorAnswer(unauthorized(), {}, dialect));
  }
  const started = performance.now();
  const facts: RequestFacts = {};
  const answer = await ctx.state.admit(
    () =>
      route.handle(ctx, callOf(ctx, req, facts)).catch((err) =>
        failureAnswer(ctx, err, req, path, dialect)
      ),
    () => errorAnswer(shuttingDown(), {}, dialect),
  );
  const finished: FinishedRequest = {
    method: req.method,
    path,
    status: answer.status,
    totalMs: performance.now() - started,
    traceId: answer.headers[H.traceId],
    facts,
  };
  // CORS grants only for a page's request (the hot path of other clients stays as it was).
  const shown = req.header("origin") === undefined
    ? answer
    : { ...answer, headers: { ...answer.headers, ...corsHeaders(req.header, browser) } };
  return {
    ...versioned(shown),
    afterWrite: () => {
      try {
        recordRequest(ctx, finished);
      } catch (err) {
        ctx.log("error", "request record failed", { error: (err as Error).message });
      }
    },
  };
}

/** `answer` with the version headers every answer carries. */
function versioned(answer: DirectAnswer): DirectAnswer {
  return { ...answer, headers: { ...answer.headers, ...VERSION_HEADERS } };
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
