/**
 * What a failed model load answers, and for how long. Every failed load answers 502
 * `MODEL_LOAD_FAILED` (no Retry-After: the clients must not retry it) with `error_class`,
 * `attempts` and `permanent` in `detail`, and the answer is repeated at once to requests for the
 * model while the failure is remembered:
 *
 * - transient causes (a weight source unreachable or failing, a time bound, anything unknown)
 *   are remembered for the cool-down; the next request after it starts a new load. So are files
 *   that do not load when a source could not prove its copy complete (no size or hash to check
 *   it by): a copy cut short would otherwise be taken for a file that can never load, and stay
 *   failed after the source was fixed (`unverified`); the next load moves the copy aside and
 *   fetches it again;
 * - permanent causes (weights not found, gated repository without access, files that do not fit
 *   the model) are remembered until the caches change: after the cool-down, a request compares
 *   the model's files in the local cache and a cluster cache directory (presence, size,
 *   modification time) with what they were when the load failed, and loads again only when they
 *   differ (the hub and an http cluster cache are not asked: that would cost a network call per
 *   request). The catalog is read once per process, so a catalog change means a restart, which
 *   forgets every failure.
 */
import { ServiceError } from "@svc/shared/errors";
import { hidePaths } from "@svc/shared/redact";
import { WeightsError } from "../weights/errors.ts";
import { IncompatibleModelError } from "./runner.ts";

/** Why a load failed, as `detail.error_class` says it. */
export type LoadErrorClass =
  | "not_found"
  | "gated"
  | "incompatible"
  | "unverified"
  | "hub_unreachable"
  | "timeout"
  | "internal";

/** Classes that only an operator can fix: retried only once the model's cached files change. */
const PERMANENT: ReadonlySet<LoadErrorClass> = new Set(["not_found", "gated", "incompatible"]);

/** Default cool-down (ms) during which a failed load is answered without a new attempt. */
export const DEFAULT_LOAD_FAILURE_COOLDOWN_MS = 30_000;

/** A remembered failed load. */
export interface LoadFailure {
  /** What the model's status reports as its `last_error`: the client's code, the bare cause. */
  lastError: { code: "MODEL_LOAD_FAILED"; message: string };
  /** The cause as the operator's log gets it (file-system paths included). */
  detail: string;
  /** The error requests get while the failure is remembered. */
  answer: ServiceError;
  errorClass: LoadErrorClass;
  permanent: boolean;
  /** Failed loads in a row, this one included. */
  attempts: number;
  /** Registry clock reading (ms) when the load failed. */
  at: number;
  /** The caches' fingerprint of the model's files when the load failed (permanent causes). */
  stamp?: string;
}

/** The class of a load error: from the weight store's or the backend's own error types. */
export function loadErrorClass(err: unknown): LoadErrorClass {
  if (err instanceof WeightsError) return err.failure;
  if (err instanceof IncompatibleModelError) return "incompatible";
  return "internal";
}

/**
 * Remember why loading `modelId` failed (its `attempts`-th failure in a row) at clock `at`.
 * `unchecked` names the model's files whose copies came from a source that could not prove them
 * complete: files that do not fit the model are then `unverified`, not `incompatible`.
 */
export function loadFailure(
  modelId: string,
  err: unknown,
  attempts: number,
  at: number,
  unchecked: readonly string[] = [],
): LoadFailure {
  let errorClass = loadErrorClass(err);
  let detail = err instanceof Error ? err.message : String(err);
  if (errorClass === "incompatible" && unchecked.length > 0) {
    errorClass = "unverified";
    detail += ` (${unchecked.join(", ")} came from a source that stated neither size nor hash, ` +
      "so the copy may be cut short: it is fetched again after the cool-down)";
  }
  const permanent = PERMANENT.has(errorClass);
  // Clients never see where files live on this machine; the log line keeps it.
  const message = hidePaths(detail);
  const answer = new ServiceError(
    "MODEL_LOAD_FAILED",
    `model '${modelId}' failed to load: ${message}`,
    {
      extra: { error_class: errorClass, attempts, permanent },
    },
  );
  return {
    lastError: { code: "MODEL_LOAD_FAILED", message },
    detail,
    answer,
    errorClass,
    permanent,
    attempts,
    at,
  };
}

/**
 * True while `failure` is still answered without a new load. After the cool-down a transient
 * failure is over; a permanent one lasts until `currentStamp()` differs from the stamp taken
 * when it failed. When the caches cannot be read (no stamp then or now), a permanent failure is
 * retried after the cool-down like a transient one: a fresh attempt reports the fresh cause.
 */
export async function failureRemembered(
  failure: LoadFailure,
  now: number,
  cooldownMs: number,
  currentStamp: () => Promise<string>,
): Promise<boolean> {
  if (now - failure.at < cooldownMs) return true;
  if (!failure.permanent) return false;
  if (failure.stamp === undefined) return false;
  const stamp = await currentStamp().catch(() => undefined);
  return stamp === failure.stamp;
}
