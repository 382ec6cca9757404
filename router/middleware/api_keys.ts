/** Middleware: client API keys (`SVC_API_KEYS`) guard the API; unset keys leave it open. */
import type { MiddlewareHandler } from "hono";
import { ServiceError } from "@svc/shared/errors";
import { bearerToken, type SecretSet } from "@svc/shared/http/secrets";
import { presentedAuthorization } from "@svc/shared/http/ws_auth";

/** Require `Authorization: Bearer <key>` matching one of `keys` (constant-time), when any is set. */
export function apiKeyAuth(keys: SecretSet): MiddlewareHandler {
  return async (c, next) => {
    if (keys.empty) return await next();
    // A browser's status socket carries the key in a subprotocol (shared/http/ws_auth.ts).
    const key = bearerToken(presentedAuthorization(c.req.raw.headers));
    if (!(await keys.matches(key))) {
      throw new ServiceError("UNAUTHORIZED", "a valid API key is required (Authorization: Bearer)");
    }
    await next();
  };
}
