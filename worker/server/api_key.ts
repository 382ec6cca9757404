/**
 * The worker's own API key (`SVC_WORKER_API_KEY`): when set, nothing but the probes answers
 * without `Authorization: Bearer <key>`, so a worker reachable on the network cannot be used
 * around the router (which sends the key on every request it forwards).
 */
import type { MiddlewareHandler } from "hono";
import { errorResponse, ServiceError } from "@svc/shared/errors";
import { bearerToken, SecretSet } from "@svc/shared/http/secrets";
import { presentedAuthorization } from "@svc/shared/http/ws_auth";

/**
 * Paths that stay open: orchestrators probe them without credentials, and the page (`/`) is
 * static: its data comes from /ws/status, which needs the key (sent as a subprotocol).
 */
const OPEN_PATHS = new Set(["/healthz", "/readyz", "/"]);

/** Headers of the 401 answer. */
export const UNAUTHORIZED_HEADERS: Readonly<Record<string, string>> = {
  "www-authenticate": "Bearer",
};

/** Whether an `Authorization` header carries the key. */
export type KeyCheck = (authorization: string | undefined) => Promise<boolean>;

/** The check for `key`; undefined when no key is set (every request passes). */
export function workerKeyCheck(key: string | undefined): KeyCheck | undefined {
  if (key === undefined) return undefined;
  const accepted = SecretSet.create([key]);
  return async (authorization) => (await accepted).matches(bearerToken(authorization));
}

/** The 401 for a request without the key. */
export function unauthorized(): ServiceError {
  return new ServiceError(
    "UNAUTHORIZED",
    "this worker requires its API key: Authorization: Bearer <SVC_WORKER_API_KEY>",
  );
}

/** Middleware requiring the key of `check` on every path but the probes (none: a no-op). */
export function requireWorkerKey(check: KeyCheck | undefined): MiddlewareHandler {
  if (check === undefined) return async (_c, next) => await next();
  return async (c, next) => {
    if (OPEN_PATHS.has(c.req.path) || await check(presentedAuthorization(c.req.raw.headers))) {
      return await next();
    }
    return errorResponse(unauthorized(), UNAUTHORIZED_HEADERS);
  };
}
