/** The one error type of the client: the server's `{detail: {code, message}}` or a client failure. */

/**
 * Codes the client itself raises (the server's codes come from its error body):
 * `CONNECTION_FAILED` (no answer after the connection retries), `TIMEOUT` (one attempt took longer
 * than `timeoutMs`), `RETRY_BUDGET_EXHAUSTED` (still a retryable 503 when the overall budget
 * ran out), `NO_CAPACITY` (the pool still had no worker after `retry.provisionWaitMs`; the router's
 * own `/v1/embeddings` code for the same), `BAD_RESPONSE` (an answer that is not the API's shape),
 * `ABORTED` (the caller's signal).
 */
export type ClientErrorCode =
  | "CONNECTION_FAILED"
  | "TIMEOUT"
  | "RETRY_BUDGET_EXHAUSTED"
  | "NO_CAPACITY"
  | "BAD_RESPONSE"
  | "ABORTED";

/** A failed call: `code` and `message` from the server's error body, or a {@link ClientErrorCode}. */
export class SvcError extends Error {
  /** Error code (`MODEL_NOT_FOUND`, `MODEL_LOAD_FAILED`, …, or a client code). */
  readonly code: string;
  /** HTTP status of the answer; 0 when none came (connection failure, timeout, abort). */
  readonly status: number;
  /** The whole `detail` object of the error body (extra fields such as `permanent` included). */
  readonly detail: Readonly<Record<string, unknown>>;
  /** The answer's `Retry-After` in seconds, when it had one. */
  readonly retryAfterS: number | undefined;

  constructor(
    code: string,
    message: string,
    opts: {
      status?: number;
      detail?: Record<string, unknown>;
      retryAfterS?: number;
      cause?: unknown;
    } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "SvcError";
    this.code = code;
    this.status = opts.status ?? 0;
    this.detail = opts.detail ?? { code, message };
    this.retryAfterS = opts.retryAfterS;
  }
}

/** The SvcError of an HTTP error answer, from its body text (JSON `{detail}` or anything else). */
export function errorFromAnswer(status: number, text: string, retryAfterS?: number): SvcError {
  let detail: Record<string, unknown> | undefined;
  try {
    const body = JSON.parse(text) as { detail?: unknown };
    if (body && typeof body.detail === "object" && body.detail !== null) {
      detail = body.detail as Record<string, unknown>;
    }
  } catch {
    // Not the API's error body (a proxy's page, say): keep the start of the text as the message.
  }
  const code = typeof detail?.code === "string" ? detail.code : `HTTP_${status}`;
  const message = typeof detail?.message === "string"
    ? detail.message
    : text.slice(0, 200) || `HTTP ${status}`;
  return new SvcError(code, message, { status, detail: detail ?? { code, message }, retryAfterS });
}
