/** Middleware: every answer carries the release version (the SIE clients warn on skew). */
import type { MiddlewareHandler } from "hono";
import { setServerVersion } from "@svc/shared/headers";
import { VERSION } from "@svc/shared/version";

/** Set the version headers on every answer except a WebSocket's 101 (which must stay as is). */
export function serverVersion(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    if (c.res.status !== 101) setServerVersion(c.res.headers, VERSION);
  };
}
