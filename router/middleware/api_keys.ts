/** Middleware: client API keys (`SVC_API_KEYS`) guard the API; unset keys leave it open. */
import type { MiddlewareHandler } from "hono";
import { ServiceError } from "@svc/shared/errors";
import { bearerToken, type SecretSet } from "@svc/shared/http/secrets";

/** Require `Authorization: Bearer <key>` matching one of `keys` (constant-time), when any is set. */
export function apiKeyAuth(keys: SecretSet): MiddlewareHandler {
  return async (c, next) => {
    if (keys.empty) return await next();
    const key = bearerToken(c.req.header("authorization"));
    if (!(await keys.matches(key))) {
      throw new ServiceError("UNAUTHORIZED", "a valid API key is required (Authorization: Bearer)");
    }
    await next();
  };
}
