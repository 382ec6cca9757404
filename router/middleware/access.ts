/** Middleware: a route needs the rights one of router/auth/access.ts's decisions grants. */
import type { Context, MiddlewareHandler } from "hono";
import type { RouterEnv } from "../context.ts";
import {
  type AccessPolicy,
  type AccessRequest,
  accessRequestOf,
  type AccessVerdict,
} from "../auth/access.ts";

/** A decision of router/auth/access.ts. */
export type Decision = (policy: AccessPolicy, req: AccessRequest) => Promise<AccessVerdict>;

/** Answer the decision's error unless it allows the request. */
export function requireRights(
  policy: AccessPolicy,
  decide: Decision,
): MiddlewareHandler<RouterEnv> {
  return async (c, next) => {
    const verdict = await decide(policy, accessOf(c));
    if (!verdict.ok) throw verdict.error;
    await next();
  };
}

/** True when `decide` allows the request of `c` (for routes whose answer depends on it). */
export async function allowed(
  policy: AccessPolicy,
  decide: Decision,
  c: Context<RouterEnv>,
): Promise<boolean> {
  return (await decide(policy, accessOf(c))).ok;
}

function accessOf(c: Context<RouterEnv>): AccessRequest {
  return accessRequestOf(c.req.raw, c.env?.remoteAddr?.hostname);
}
