/**
 * The steps every worker request passes, in order, listed once: the app runs them as Hono
 * middleware (app.ts), the model operations' direct path around its route (model_routes.ts).
 *
 *   0. `x-request-id` (and `X-Trace-ID` where the route set none) on every answer, set again
 *      innermost so that the access record names an error answer's trace id;
 *   1. version headers on every answer (the SIE clients warn on skew; a WebSocket's 101 as is);
 *   2. the browser rules (preflights, refused bodies and origins, CORS grants), before the key so
 *      that preflights are answered;
 *   3. the API key;
 *   4. the drain gate and in-flight count, then the access record (log line, metrics), written
 *      once the answer is out where the path can tell.
 */
import type { Context } from "hono";
import { errorDialectOf } from "@svc/shared/errors";
import { HeaderNames as H, serverVersionHeaders } from "@svc/shared/headers";
import { VERSION } from "@svc/shared/version";
import { browserStep } from "@svc/shared/http/browser_middleware";
import { requestIdStep } from "@svc/shared/http/request_id";
import type { Step, StepRequest } from "@svc/shared/http/steps";
import { stepMiddleware } from "@svc/shared/http/steps";
import { apiKeyStep, type KeyCheck } from "./api_key.ts";
import type { WorkerContext } from "./context.ts";
import { shuttingDown } from "./failure.ts";
import type { RequestFacts } from "./model_call.ts";
import { recordRequest } from "./request_record.ts";

/** A worker request as its steps see it: what its route learnt goes in `facts`. */
export interface WorkerRequest extends StepRequest {
  readonly facts: RequestFacts;
}

/** The worker's steps, in order. */
export type WorkerSteps = readonly Step<WorkerRequest>[];

/** Paths that stay open while draining (probes, metrics, status stream, dashboard). */
const ALWAYS_OPEN = new Set(["/", "/healthz", "/readyz", "/metrics", "/ws/status"]);

const VERSION_HEADERS = serverVersionHeaders(VERSION);

/** The worker's steps for `ctx`, with the API key's check (undefined: no key). */
export function workerSteps(ctx: WorkerContext, keyCheck: KeyCheck | undefined): WorkerSteps {
  return [
    requestIdStep,
    versionStep,
    browserStep(ctx.settings.browser),
    apiKeyStep(keyCheck),
    drainStep(ctx),
    // Again inside the record: the access line names the trace id an error answer is sent with
    // (the outer one covers the answers of the steps above; it then only reads it).
    requestIdStep,
  ];
}

/** Every answer carries the server's version headers; a WebSocket's 101 stays as it is. */
const versionStep: Step = async (_req, kit, next) => {
  const answer = await next();
  return kit.status(answer) === 101 ? answer : kit.withHeaders(answer, VERSION_HEADERS);
};

/** The drain gate and in-flight count around the route, then the request's record. */
function drainStep(ctx: WorkerContext): Step<WorkerRequest> {
  return async (req, kit, next) => {
    if (ALWAYS_OPEN.has(req.path)) return await next();
    const started = performance.now();
    const answer = await ctx.state.admit(next, () => kit.error(shuttingDown()));
    const finished = {
      method: req.method,
      path: req.path,
      status: kit.status(answer),
      totalMs: performance.now() - started,
      traceId: kit.header(answer, H.traceId),
      facts: req.facts,
    };
    return kit.afterWrite(answer, () => {
      try {
        recordRequest(ctx, finished);
      } catch (err) {
        ctx.log("error", "request record failed", { error: (err as Error).message });
      }
    });
  };
}

/** The worker's steps as Hono middleware, in their order. */
export function workerMiddleware(steps: WorkerSteps) {
  return steps.map((step) => stepMiddleware(step, workerRequestOf, errorDialectOf));
}

/** The view of a request served by the app (its routes report no facts). */
function workerRequestOf(c: Context): WorkerRequest {
  return {
    method: c.req.method,
    path: c.req.path,
    header: (name) => c.req.header(name),
    facts: {},
  };
}
