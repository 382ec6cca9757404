/** Error codes of the API, their HTTP status, and the one error type used everywhere. */
import { OPERATIONS } from "./operations.ts";

export const ERROR_STATUS = {
  INVALID_INPUT: 400,
  MODEL_NOT_FOUND: 404,
  NOT_FOUND: 404,
  DEPENDENCY_CONFLICT: 409,
  /** Still loading after the request's wait (the existing clients retry exactly this code). */
  MODEL_LOADING: 503,
  /** Unloading: the model comes back on a later request. */
  MODEL_NOT_LOADED: 503,
  /** The last load failed and is remembered; no Retry-After (clients must not retry). */
  MODEL_LOAD_FAILED: 502,
  LORA_LOADING: 503,
  QUEUE_FULL: 503,
  SHUTTING_DOWN: 503,
  NO_CAPACITY: 503,
  UNAUTHORIZED: 401,
  /** Valid credentials without the right (a client key on an admin route). */
  FORBIDDEN: 403,
  METHOD_NOT_ALLOWED: 405,
  /** A request body that is not JSON or msgpack. */
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** More connections or requests in flight from one peer than the server allows. */
  TOO_MANY_REQUESTS: 429,
  REQUEST_TIMEOUT: 408,
  BAD_GATEWAY: 502,
  /**
   * Router: the worker received the request whole, then dropped the connection without an
   * answer (it may have crashed). Not retried anywhere, and no Retry-After: the request may be
   * what killed the worker.
   */
  WORKER_LOST: 502,
  GATEWAY_TIMEOUT: 504,
  /** An operation this deployment does not offer (e.g. creating pools at run time). */
  NOT_IMPLEMENTED: 501,
  INFERENCE_ERROR: 500,
  INTERNAL_ERROR: 500,
} as const;

/** Every error code the service may send in `detail.code`. */
export type ErrorCode = keyof typeof ERROR_STATUS;

/** Default `Retry-After` (seconds) per retryable code; absent means "do not send the header". */
export const DEFAULT_RETRY_AFTER_S: Partial<Record<ErrorCode, number>> = {
  MODEL_LOADING: 5,
  MODEL_NOT_LOADED: 5,
  LORA_LOADING: 2,
  QUEUE_FULL: 1,
  SHUTTING_DOWN: 5,
  NO_CAPACITY: 10,
  TOO_MANY_REQUESTS: 1,
};

/** Fields some errors add to `detail` (MODEL_LOAD_FAILED: `error_class`, `attempts`, `permanent`). */
export type ErrorExtra = Readonly<Record<string, string | number | boolean>>;

/** Wire body of every error: `{detail: {code, message}}`, plus the code's extra fields. */
export interface ErrorBody {
  detail: { code: ErrorCode; message: string; [field: string]: unknown };
}

/** The service's single error type: carries the code, the HTTP status and an optional retry hint. */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryAfterS: number | undefined;
  /** Extra `detail` fields sent with the code and message. */
  readonly extra: ErrorExtra | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { retryAfterS?: number; extra?: ErrorExtra } = {},
  ) {
    super(message);
    this.name = "ServiceError";
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.retryAfterS = opts.retryAfterS ?? DEFAULT_RETRY_AFTER_S[code];
    this.extra = opts.extra;
  }

  /** The JSON body sent to the client. */
  toBody(): ErrorBody {
    return { detail: { ...this.extra, code: this.code, message: this.message } };
  }
}

/**
 * The client disconnected before its answer: there is nobody to answer and nothing failed, so it
 * is logged at debug level, never reported as a 500.
 */
export class ClientGoneError extends Error {
  constructor(message = "client went away") {
    super(message);
    this.name = "ClientGoneError";
  }
}

/** Shorthand for a 400 INVALID_INPUT error. */
export function invalidInput(message: string): ServiceError {
  return new ServiceError("INVALID_INPUT", message);
}

/** Wrap anything thrown into a ServiceError without leaking internals of unexpected errors. */
export function toServiceError(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  return new ServiceError("INTERNAL_ERROR", "unexpected server error");
}

/**
 * The error envelope a route's clients read. Every error body carries `detail`; the compatible
 * routes add what their clients' SDKs read beside it: OpenAI's `{"error": {message, type, param,
 * code}}` on `/v1/embeddings` (the `openai` SDK shows "N status code (no body)" without it) and
 * Cohere's top-level `message` on the rerank and embed routes.
 */
export type ErrorDialect = "native" | "openai" | "cohere";

/** Paths whose clients speak another API's errors (the same on worker and router). */
const DIALECT_PATHS: ReadonlyMap<string, ErrorDialect> = new Map(
  OPERATIONS.flatMap((o) => o.dialect === "native" ? [] : [[o.path, o.dialect]]),
);

/** The error envelope of a request path. */
export function errorDialectOf(path: string): ErrorDialect {
  return DIALECT_PATHS.get(path) ?? "native";
}

/** OpenAI's error `type` for an HTTP status. */
function openAiErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 429) return "rate_limit_error";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

/** The JSON body of `err` in `dialect`: `{detail}`, plus the dialect's own fields. */
export function errorBodyOf(err: ServiceError, dialect: ErrorDialect = "native"): object {
  const body = err.toBody();
  switch (dialect) {
    case "native":
      return body;
    case "cohere":
      return { message: err.message, ...body };
    case "openai":
      return {
        error: {
          message: err.message,
          type: openAiErrorType(err.status),
          // The one field an error can name without parsing its message.
          param: err.code === "MODEL_NOT_FOUND" ? "model" : null,
          code: err.code.toLowerCase(),
        },
        ...body,
      };
  }
}

/**
 * Status, headers and JSON text of the answer for an error. A retryable code says when to retry
 * (`Retry-After`); a 401 says how to authenticate (`WWW-Authenticate: Bearer`, RFC 6750), from
 * router and worker alike.
 */
export function errorParts(
  err: ServiceError,
  extraHeaders: Readonly<Record<string, string>> = {},
  dialect: ErrorDialect = "native",
): { status: number; headers: Record<string, string>; text: string } {
  const headers: Record<string, string> = { "content-type": "application/json", ...extraHeaders };
  if (err.retryAfterS !== undefined) headers["retry-after"] = String(err.retryAfterS);
  if (err.status === 401) headers["www-authenticate"] = "Bearer";
  return { status: err.status, headers, text: JSON.stringify(errorBodyOf(err, dialect)) };
}

/** Build an HTTP Response (JSON) for an error. */
export function errorResponse(
  err: ServiceError,
  extraHeaders: Readonly<Record<string, string>> = {},
  dialect: ErrorDialect = "native",
): Response {
  const { status, headers, text } = errorParts(err, extraHeaders, dialect);
  return new Response(text, { status, headers });
}
