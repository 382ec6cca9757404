/**
 * What a failed model load answers, and for how long. The answer is remembered and repeated to
 * requests for the model until the retry pause is over; then the next request starts a new load.
 */
import { DEFAULT_RETRY_AFTER_S, type ErrorCode, ServiceError } from "@svc/shared/errors";

/** How long a failed load's answer is repeated before a request may try again. */
export const LOAD_RETRY_PAUSE_MS = (DEFAULT_RETRY_AFTER_S.MODEL_NOT_LOADED ?? 5) * 1000;

/** A remembered failed load. */
export interface LoadFailure {
  /** What the model's status reports as its `last_error` (the cause, unprefixed). */
  lastError: { code: ErrorCode; message: string };
  /** The error requests get while the failure is remembered. */
  answer: ServiceError;
  /** Registry clock reading (ms) when the load failed. */
  at: number;
}

/** Remember why loading `modelId` failed at clock reading `at`. */
export function loadFailure(modelId: string, err: unknown, at: number): LoadFailure {
  const se = err instanceof ServiceError ? err : undefined;
  const message = err instanceof Error ? err.message : String(err);
  const text = `model '${modelId}' failed to load: ${message}`;
  // Transient causes (network, timeouts) stay 503 + Retry-After; others (gated repo, bad
  // weights) keep their own code so clients do not retry what only an operator can fix. A
  // missing weights file is the deployment's fault, not a model the client named wrongly.
  const answer = se?.code === "MODEL_NOT_LOADED"
    ? new ServiceError("MODEL_NOT_LOADED", text)
    : new ServiceError(se && se.code !== "MODEL_NOT_FOUND" ? se.code : "INTERNAL_ERROR", text);
  return { lastError: { code: se?.code ?? "INTERNAL_ERROR", message }, answer, at };
}

/** True while `failure` is still answered instead of starting a new load. */
export function failureRemembered(failure: LoadFailure, now: number): boolean {
  return now - failure.at < LOAD_RETRY_PAUSE_MS;
}
