/** The browser rules of shared/http/browser_guard.ts as Hono middleware (router and worker app). */
import type { MiddlewareHandler } from "hono";
import { errorResponse, ServiceError } from "../errors.ts";
import {
  type BrowserPolicy,
  browserProblem,
  corsHeaders,
  preflightAnswer,
} from "./browser_guard.ts";

/** Answer preflights, refuse what a browser must not do, add CORS grants to allowed origins. */
export function browserGuard(policy: BrowserPolicy): MiddlewareHandler {
  return async (c, next) => {
    const header = (name: string) => c.req.header(name);
    const pre = preflightAnswer(c.req.method, header, policy);
    if (pre instanceof ServiceError) return errorResponse(pre, { vary: "Origin" });
    if (pre) return new Response(null, pre);
    const problem = browserProblem(c.req.method, header, policy);
    if (problem) return errorResponse(problem);
    await next();
    if (c.res.status === 101) return;
    for (const [k, v] of Object.entries(corsHeaders(header, policy))) c.res.headers.set(k, v);
  };
}
