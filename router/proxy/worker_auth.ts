/**
 * What the router presents to a worker: that worker's own request key, derived from the fleet's
 * worker secret (shared/fleet/worker_keys.ts), never the secret itself. A machine that registers
 * with the worker token receives only its own key, which no other worker accepts.
 */
import { WorkerKeys } from "@svc/shared/fleet/worker_keys";

/** The `Authorization` value for requests to a worker; undefined when workers have no key. */
export type WorkerAuth = (workerId: string) => Promise<string | undefined>;

/** Keys remembered (one HMAC per worker id, not per request); beyond it the oldest is derived again. */
const MAX_CACHED = 4096;

/** The auth of a router with worker secret `secret` (`SVC_WORKER_API_KEY`), if any. */
export function workerAuthOf(secret: string | undefined): WorkerAuth {
  if (secret === undefined) return () => Promise.resolve(undefined);
  const keys = new WorkerKeys(secret);
  const cache = new Map<string, string>();
  return async (workerId) => {
    let value = cache.get(workerId);
    if (value === undefined) {
      value = `Bearer ${await keys.requestKey(workerId)}`;
      if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
      cache.set(workerId, value);
    }
    return value;
  };
}
