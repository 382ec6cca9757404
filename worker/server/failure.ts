/** What a request whose handling threw answers, whichever path served it. */
import { ClientGoneError, ServiceError, toServiceError } from "@svc/shared/errors";
import type { WorkerContext } from "./context.ts";

/** Status recorded for a request whose client disconnected before its answer (nginx's 499). */
export const CLIENT_CLOSED = 499;

/** The 503 for new work once draining has begun. */
export function shuttingDown(): ServiceError {
  return new ServiceError("SHUTTING_DOWN", "worker is shutting down");
}

/**
 * The API error to answer with, or null when the client is gone (nobody is left to answer: not a
 * failure; 499 is what the access log and metrics show, and no bytes are sent).
 */
export function failureOf(
  ctx: WorkerContext,
  err: unknown,
  clientGone: boolean,
  where: { method: string; path: string },
): ServiceError | null {
  if (err instanceof ClientGoneError || clientGone) {
    ctx.log("debug", "client disconnected", where);
    return null;
  }
  let se = toServiceError(err);
  if (ctx.state.stopping && se.status >= 500 && se.status !== 503) {
    // Torn down by the shutdown under the request: another worker can serve it.
    se = new ServiceError("SHUTTING_DOWN", "worker stopped before this request finished");
  }
  if (!(err instanceof ServiceError)) {
    ctx.log("error", "unhandled error", {
      path: where.path,
      error: err instanceof Error ? err.message : String(err),
    });
  }
  return se;
}
