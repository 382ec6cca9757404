/**
 * What `/health` shows to whom. Clients without fleet detail rights get the capacity summary the
 * SIE clients read (`type`, `cluster`, live and configured GPU types, per worker its profile,
 * GPUs, state and loaded models); worker ids and URLs, load, memory, the router's id and pending
 * demand are fleet detail (router/auth/access.ts).
 */
import type {
  ClientHealthBody,
  ClientWorkerHealth,
  HealthBody,
  WorkerHealth,
} from "@svc/shared/schemas/router";

/** The summary of `body` for a client without fleet detail rights. */
export function clientHealth(body: HealthBody): ClientHealthBody {
  const { router_id: _r, directory: _d, workers, pending_demand: _p, ...rest } = body;
  return { ...rest, view: "summary", workers: workers.map(clientWorker) };
}

/** A worker without what identifies or locates it (fields added later pass through). */
export function clientWorker(w: WorkerHealth): ClientWorkerHealth {
  const {
    id: _id,
    name: _name,
    url: _url,
    version: _version,
    queue_depth: _q,
    in_flight: _f,
    memory_used_bytes: _mu,
    memory_total_bytes: _mt,
    models: _models,
    registered_at: _at,
    last_seen_ms_ago: _seen,
    ...rest
  } = w;
  return rest;
}
