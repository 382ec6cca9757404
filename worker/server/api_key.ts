/**
 * The worker's own API key (`SVC_WORKER_API_KEY`): when set, nothing but the probes answers
 * without `Authorization: Bearer <key>`, so a worker reachable on the network cannot be used
 * around the router (which sends the key on every request it forwards).
 */
import type { MiddlewareHandler } from "hono";
import { errorResponse, ServiceError } from "@svc/shared/errors";
import { bearerToken, SecretSet } from "@svc/shared/http/secrets";

/** Paths that stay open: orchestrators probe them without credentials. */
const OPEN_PATHS = new Set(["/healthz", "/readyz"]);

/** Middleware requiring `key` on every path but the probes (a no-op when `key` is unset). */
export function requireWorkerKey(key: string | undefined): MiddlewareHandler {
  if (key === undefined) return async (_c, next) => await next();
  const accepted = SecretSet.create([key]);
  return async (c, next) => {
    if (OPEN_PATHS.has(c.req.path)) return await next();
    if (await (await accepted).matches(bearerToken(c.req.header("authorization")))) {
      return await next();
    }
    return errorResponse(
      new ServiceError(
        "UNAUTHORIZED",
        "this worker requires its API key: Authorization: Bearer <SVC_WORKER_API_KEY>",
      ),
      { "www-authenticate": "Bearer" },
    );
  };
}
