/**
 * The worker's API key (`SVC_WORKER_API_KEY`, the fleet's worker secret): when set, nothing but
 * the probes and the static page answers without `Authorization: Bearer` (on a WebSocket upgrade,
 * or the `svc.bearer.*` subprotocol: shared/http/ws_auth.ts) and one of two keys: this worker's own
 * request key (derived from the secret and its worker id: what the router sends it, see
 * shared/fleet/worker_keys.ts), or the secret itself (operators). A worker reachable on the
 * network cannot be used around the router, and the key another machine received from the router
 * (its own) opens nothing here.
 */
import { ServiceError } from "@svc/shared/errors";
import type { Step } from "@svc/shared/http/steps";
import { SecretSet } from "@svc/shared/http/secrets";
import { presentedAuthorization } from "@svc/shared/http/ws_auth";
import { WorkerKeys } from "@svc/shared/fleet/worker_keys";

/**
 * Paths that stay open: orchestrators probe them without credentials, and the page (`/`) is
 * static: its data comes from /ws/status, which needs the key (sent as a subprotocol).
 */
const OPEN_PATHS = new Set(["/healthz", "/readyz", "/"]);

/** Whether an `Authorization` header carries the key. */
export type KeyCheck = (authorization: string | undefined) => Promise<boolean>;

/**
 * The check for `key` on worker `workerId` (a fleet member: its request key is accepted too);
 * undefined when no key is set (every request passes).
 */
export function workerKeyCheck(
  key: string | undefined,
  workerId?: string,
): KeyCheck | undefined {
  if (key === undefined) return undefined;
  const accepted = (async () => {
    const own = workerId === undefined ? [] : [await new WorkerKeys(key).requestKey(workerId)];
    return await SecretSet.create([key, ...own]);
  })();
  return async (authorization) => (await accepted).admits(authorization);
}

/** The 401 for a request without the key. */
export function unauthorized(): ServiceError {
  return new ServiceError(
    "UNAUTHORIZED",
    "this worker requires its API key: Authorization: Bearer <SVC_WORKER_API_KEY>",
  );
}

/** The step requiring the key of `check` on every path but the probes (none: it passes all). */
export function apiKeyStep(check: KeyCheck | undefined): Step {
  if (check === undefined) return (_req, _kit, next) => next();
  return async (req, kit, next) => {
    if (OPEN_PATHS.has(req.path)) return await next();
    if (await check(presentedAuthorization({ get: req.header }))) return await next();
    return kit.error(unauthorized());
  };
}
