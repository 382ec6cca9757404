/** Everything the router's routes and middleware receive, passed explicitly (no globals). */
import type { Logger } from "@svc/shared/log";
import type { AccessPolicy } from "./auth/access.ts";
import type { BodyReadOptions } from "@svc/shared/http/read_body";
import type { WorkerDirectory } from "./directory/types.ts";
import type { FleetHub } from "./fleet/hub.ts";
import type { RouterMetrics } from "./metrics/router_metrics.ts";
import type { LoadTracker } from "./pools/load.ts";
import type { DemandTracker } from "./provisioning.ts";
import type { ResultCache } from "./cache/edge.ts";
import type { RouterSettings } from "./settings.ts";
import type { WorkerAuth } from "./proxy/worker_auth.ts";
import type { KvDrains } from "./kv/drains.ts";
import type { ReplayPolicy } from "./proxy/replay.ts";
import type { RouterServeInfo } from "./http_server.ts";
import type { RelayClient } from "./fleet/relay/client.ts";

/** Dependencies of the router's HTTP app; built by server.ts (or a test). */
export interface RouterContext {
  settings: RouterSettings;
  directory: WorkerDirectory;
  hub: FleetHub;
  /** Who may use the API, act as an operator and see fleet detail. */
  access: AccessPolicy;
  metrics: RouterMetrics;
  demand: DemandTracker;
  load: LoadTracker;
  log: Logger;
  routerId: string;
  /** How request bodies are read: size, idle timeout, and this process's in-flight budget. */
  body: BodyReadOptions;
  /** The result cache and coalescing of model requests; absent when off. */
  cache?: ResultCache;
  /** Drain marks for workers held by other router instances (KV mode). */
  drains?: KvDrains;
  /**
   * The relay through KV to the instance holding a worker's connection (KV mode, unless
   * `SVC_RELAY_MAX_BODY_BYTES=0`): the last path to a worker this instance cannot reach.
   */
  relay?: RelayClient;
  /** Which requests dropped by a dying worker go once more to another (absent: none). */
  replay?: ReplayPolicy;
  /** Epoch ms the router started (its start-up hold: SVC_STARTUP_HOLD_MS); absent: none. */
  startedAt?: number;
  /** What the router presents to a worker (its own request key, when workers have one). */
  workerAuth: WorkerAuth;
  /**
   * Outbound fetch of the catalog queries (tests may inject); defaults to the global fetch.
   * Forwarding has its own client (router/proxy/upstream.ts).
   */
  fetch?: typeof fetch;
}

/** Hono environment of the router: the peer address, and what handlers tell the access log. */
export type RouterEnv = {
  /** What the server hands beside the request (router/http_server.ts; absent in `app.request`). */
  Bindings: Partial<RouterServeInfo>;
  Variables: {
    /** The pool (machine profile) the request was routed to. */
    machineProfile: string;
    /** The worker that answered. */
    worker: string;
    /** The model of a model request, once the router knows it (a bounded metric label). */
    model: string;
  };
};
