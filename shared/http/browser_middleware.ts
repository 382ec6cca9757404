/**
 * The browser rules of shared/http/browser_guard.ts as a request step (shared/http/steps.ts: the
 * worker's app and model routes) and as Hono middleware (the router's app).
 */
import type { MiddlewareHandler } from "hono";
import { errorDialectOf, ServiceError } from "../errors.ts";
import {
  type BrowserPolicy,
  browserProblem,
  corsHeaders,
  preflightAnswer,
} from "./browser_guard.ts";
import { honoRequestView, type Step, stepMiddleware } from "./steps.ts";

/** Answer preflights, refuse what a browser must not do, add CORS grants to allowed origins. */
export function browserStep(policy: BrowserPolicy): Step {
  return async (req, kit, next) => {
    const header = req.header;
    const pre = preflightAnswer(req.method, header, policy);
    if (pre instanceof ServiceError) return kit.error(pre, { vary: "Origin" });
    if (pre) return kit.empty(pre.status, pre.headers);
    const problem = browserProblem(req.method, header, policy);
    if (problem) return kit.error(problem);
    const answer = await next();
    // Grants answer a page's request only: other clients' answers stay as they were.
    if (kit.status(answer) === 101 || header("origin") === undefined) return answer;
    const grants = corsHeaders(header, policy);
    return Object.keys(grants).length === 0 ? answer : kit.withHeaders(answer, grants);
  };
}

/** {@link browserStep} as Hono middleware (errors in the route's envelope, as the worker's). */
export function browserGuard(policy: BrowserPolicy): MiddlewareHandler {
  return stepMiddleware(browserStep(policy), honoRequestView, errorDialectOf);
}
