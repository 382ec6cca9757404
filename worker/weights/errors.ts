/** Error messages of weight fetching: they name the model and never contain secrets. */
import { type ErrorCode, ServiceError } from "@svc/shared/errors";
import { FileTooLargeError } from "./atomic_file.ts";
import type { WeightFileRef } from "./types.ts";
import { secretRedactor } from "@svc/shared/redact";

/**
 * Why weights could not be had, as a failed model load reports it (`detail.error_class`):
 * `not_found` and `gated` only change when an operator acts; `hub_unreachable` (a source failed
 * or could not be reached) and `timeout` may pass on their own.
 */
export type WeightFailure = "not_found" | "gated" | "hub_unreachable" | "timeout";

/** An error of the weight store that says which {@link WeightFailure} it is. */
export class WeightsError extends ServiceError {
  constructor(readonly failure: WeightFailure, code: ErrorCode, message: string) {
    super(code, message);
  }
}

/** The name used for a model in messages: the catalog id when known, else the repository. */
export function modelLabel(ref: WeightFileRef): string {
  return ref.modelId && ref.modelId !== ref.repo ? `${ref.modelId} (repo ${ref.repo})` : ref.repo;
}

/** The hub refused access (401/403): gated or private repository, or a rejected token. */
export function accessDeniedError(
  ref: WeightFileRef,
  status: number,
  tokenConfigured: boolean,
  maybeMissing = false,
): ServiceError {
  // Without a token the hub answers 401 for missing repositories too, so it cannot be ruled out.
  const kind = maybeMissing ? "gated or private, or does not exist" : "gated or private";
  const what = `Access to the weights of model ${modelLabel(ref)} was denied by the model hub ` +
    `(HTTP ${status}): the repository is ${kind}.`;
  const fix = tokenConfigured
    ? " The configured HF_TOKEN was rejected or its account has not been granted access: accept" +
      " the model's licence on the hub with that account, or set HF_TOKEN to a token that has."
    : " Set HF_TOKEN to an access token of a hub account that has accepted the model's licence" +
      " (and been granted access), then retry.";
  // Not retryable without an operator fixing the configuration, hence not MODEL_NOT_LOADED.
  return new WeightsError("gated", "INTERNAL_ERROR", what + fix);
}

/**
 * A file is larger than its caller accepts (`maxBytes`): refused before it is downloaded where the
 * source states the size (hub, http cluster cache), while it streams where it does not (the
 * download stops at the bound; `size` then counts the bytes that had arrived, `streamed` is
 * true), else as soon as it is in place.
 */
export class WeightFileTooLargeError extends ServiceError {
  constructor(
    readonly ref: WeightFileRef,
    readonly size: number,
    readonly maxBytes: number,
    readonly streamed = false,
  ) {
    super(
      "INVALID_INPUT",
      `Weights file '${ref.path}' of ${modelLabel(ref)} ${overBound(size, maxBytes, streamed)}.`,
    );
  }

  /** `is 20971520 bytes, more than the 1048576 allowed`, or how the stopped download ended. */
  get over(): string {
    return overBound(this.size, this.maxBytes, this.streamed);
  }
}

function overBound(size: number, maxBytes: number, streamed: boolean): string {
  return streamed
    ? `is larger than the ${maxBytes} bytes allowed (its download was stopped at ${size} bytes)`
    : `is ${size} bytes, more than the ${maxBytes} allowed`;
}

/**
 * The error of a file too large for its caller, whichever way it was found: the size a source
 * stated ({@link WeightFileTooLargeError} already), or a download stopped at the ref's bound
 * ({@link FileTooLargeError}). Undefined for any other error.
 */
export function tooLargeError(
  ref: WeightFileRef,
  err: unknown,
): WeightFileTooLargeError | undefined {
  if (err instanceof WeightFileTooLargeError) return err;
  if (err instanceof FileTooLargeError) {
    return new WeightFileTooLargeError(ref, err.received, err.maxBytes, true);
  }
  return undefined;
}

/** Throws {@link WeightFileTooLargeError} when `size` exceeds the ref's `maxBytes`. */
export function checkFileSize(ref: WeightFileRef, size: number): void {
  if (ref.maxBytes !== undefined && size > ref.maxBytes) {
    throw new WeightFileTooLargeError(ref, size, ref.maxBytes);
  }
}

/** No source has the file. */
export function weightsNotFoundError(ref: WeightFileRef, tried: string[]): ServiceError {
  return new WeightsError(
    "not_found",
    "MODEL_NOT_FOUND",
    `Weights file '${ref.path}' of model ${modelLabel(ref)} at revision ${ref.revision} was not` +
      ` found in: ${tried.join(", ")}.`,
  );
}

/** A source failed for another reason (network, timeout, server error): worth retrying later. */
export function sourceFailedError(
  sourceName: string,
  ref: WeightFileRef,
  err: unknown,
  secret?: string,
  timedOut = isTimeout(err),
): ServiceError {
  const reason = redact(err instanceof Error ? err.message : String(err), secret);
  return new WeightsError(
    timedOut ? "timeout" : "hub_unreachable",
    "MODEL_NOT_LOADED",
    `Could not fetch '${ref.path}' of model ${modelLabel(ref)} from ${sourceName}: ${reason}`,
  );
}

/** True when `err` (or an error it wraps) is a time bound running out (`TimeoutError`). */
function isTimeout(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e.name === "TimeoutError") return true;
  }
  return false;
}

/** Replaces every occurrence of `secret` in `text`, in case a library echoed it. */
export function redact(text: string, secret?: string): string {
  return secretRedactor([secret], "[redacted]")(text);
}

/**
 * Of the sources' errors for one request, the one to report: an actionable error (access denied,
 * bad config) beats a transient one (`MODEL_NOT_LOADED`); else the first.
 */
export function mostRelevant(errors: readonly ServiceError[]): ServiceError {
  return errors.find((e) => e.code !== "MODEL_NOT_LOADED") ?? errors[0];
}
