/** Assemble and start a router: directory, fleet hub, app, HTTP server. */
import { VERSION } from "@svc/shared/version";
import { createRouterApp } from "./app.ts";
import { SecretSet } from "@svc/shared/http/secrets";
import { BodyBudget } from "@svc/shared/http/body_budget";
import type { RouterSettings } from "./settings.ts";
import { kvPollMs, openDirectory } from "./directory/open.ts";
import type { WorkerDirectory } from "./directory/types.ts";
import { FleetHub } from "./fleet/hub.ts";
import { isLoopbackListen } from "./fleet/addresses.ts";
import { dnsResolver } from "./fleet/advertised_url.ts";
import { WorkerKeys } from "@svc/shared/fleet/worker_keys";
import { workerAuthOf } from "./proxy/worker_auth.ts";
import type { Network } from "./fleet/networks.ts";
import { createLogger, type Logger } from "@svc/shared/log";
import { createRouterMetrics, type RouterMetrics } from "./metrics/router_metrics.ts";
import { LoadTracker } from "./pools/load.ts";
import { DemandTracker } from "./provisioning.ts";
import { serveRouter } from "./http_server.ts";
import { ResultCache } from "./cache/edge.ts";
import { KvResultTier } from "./cache/kv_tier.ts";
import { KvDemand } from "./kv/demand.ts";
import { KvDrains } from "./kv/drains.ts";
import { ReplayPolicy } from "./proxy/replay.ts";
import { openRelay } from "./fleet/relay/open.ts";

/** A running router. */
export interface RunningRouter {
  /** Port actually bound (useful with SVC_PORT=0). */
  port: number;
  /** `http://host:port` for clients on this machine. */
  url: string;
  routerId: string;
  directory: WorkerDirectory;
  metrics: RouterMetrics;
  /** The result cache and its flights (absent when `SVC_RESULT_CACHE_BYTES=0`). */
  cache: ResultCache | undefined;
  /** Close worker sockets, stop serving, release the directory. */
  close(): Promise<void>;
  /** Resolves when the HTTP server has stopped. */
  finished: Promise<void>;
}

/** Options beyond the config (tests share one Deno.Kv between two routers, inject a fetch). */
export interface StartOptions {
  log?: Logger;
  /** Use this KV handle (not closed by the router) instead of opening SVC_KV_PATH. */
  kv?: Deno.Kv;
  fetch?: typeof fetch;
  /** Called once the server listens. */
  onListen?: (addr: { hostname: string; port: number }) => void;
  /**
   * Networks whose workers are accepted whatever SVC_WORKER_ALLOWED_NETWORKS and the listen
   * address say (`deno task start`: its own worker on 127.0.0.1).
   */
  trustedWorkerNetworks?: Network[];
}

/** Start a router with `settings`; resolves once it listens. */
export async function startRouter(
  settings: RouterSettings,
  opts: StartOptions = {},
): Promise<RunningRouter> {
  const log = opts.log ?? createLogger({
    ...settings.log,
    component: "router",
    secrets: settings.secrets,
  });
  for (const w of settings.warnings) log("warn", w);
  const routerId = `router-${crypto.randomUUID().slice(0, 8)}`;
  const metrics = createRouterMetrics();
  const { directory, kv, close: closeDirectory } = await openDirectory(
    settings.directory,
    log,
    opts.kv,
    routerId,
  );
  if (settings.adminKeys.length === 0 && !isLoopbackListen(settings.listen.host)) {
    log(
      "warn",
      "SVC_ADMIN_KEYS is not set: admin actions and fleet detail are refused (set it " +
        "to drain workers and read /health in full, /metrics and the dashboard)",
    );
  }
  if (settings.workerToken === undefined) {
    log("warn", "SVC_WORKER_TOKEN is not set: every worker connection will be refused");
  }
  const hub = new FleetHub({
    directory,
    workerTokens: await SecretSet.create(settings.workerToken ? [settings.workerToken] : []),
    workerKeys: settings.workerApiKey === undefined
      ? undefined
      : new WorkerKeys(settings.workerApiKey),
    routerId,
    ...settings.fleet,
    maxModelsPerWorker: settings.fleetLimits.maxModelsPerWorker,
    maxFramesPerS: settings.fleetLimits.maxFramesPerS,
    caps: settings.fleetLimits.caps,
    streams: settings.fleetLimits.streams,
    urlPolicy: {
      allowedNetworks: settings.fleetLimits.allowedNetworks,
      localStack: isLoopbackListen(settings.listen.host),
      alsoAllowed: opts.trustedWorkerNetworks ?? [],
      resolve: dnsResolver(),
    },
    log,
    metrics,
  });
  const kvPrefix = settings.directory.kvPrefix;
  const pollMs = kvPollMs(settings.directory);
  const demand = new DemandTracker({
    share: kv
      ? new KvDemand({
        kv,
        prefix: kvPrefix,
        windowS: settings.provisioning.demandWindowS,
        pollMs,
        log,
      })
      : undefined,
    windowS: settings.provisioning.demandWindowS,
    webhook: settings.provisioning.webhook,
    routerId,
    log,
    metrics,
    fetch: opts.fetch,
  });
  const budget = new BodyBudget(settings.http.maxInflightBodyBytes);
  metrics.registry.onCollect(() => metrics.bodyBytesHeld.set({}, budget.used));
  const cache = settings.resultCache.maxBytes > 0
    ? new ResultCache({
      settings: settings.resultCache,
      directory,
      metrics,
      exposeWorkerId: settings.exposeWorkerId,
      requireProvenWorkers: settings.workerApiKey !== undefined,
      tier: kv && settings.resultCache.kvMaxEntryBytes > 0
        ? new KvResultTier({
          kv,
          prefix: kvPrefix,
          maxEntryBytes: Math.min(
            settings.resultCache.kvMaxEntryBytes,
            settings.resultCache.maxEntryBytes,
          ),
          ttlMs: settings.resultCache.ttlMs,
          log,
        })
        : undefined,
    })
    : undefined;
  const drains = kv
    ? new KvDrains({
      kv,
      prefix: kvPrefix,
      pollMs,
      carryOut: async (id, connId, hash) => (await hub.drainWorker(id, connId, hash)) !== undefined,
      log,
    })
    : undefined;
  if (cache) metrics.registry.onCollect(() => metrics.cacheBytes.set({}, cache.store.bytes));
  const load = new LoadTracker();
  const workerAuth = workerAuthOf(settings.workerApiKey);
  const relay = kv
    ? openRelay({
      kv,
      relay: settings.relay,
      directory: settings.directory,
      routerId,
      timeoutMs: settings.upstreamTimeoutMs,
      serve: {
        streamsOf: (id) => hub.streamsOfWorker(id),
        workerAuth,
        load,
        served: (outcome) => metrics.relay.inc({ side: "served", outcome }),
      },
      budget,
      log,
    })
    : undefined;
  const app = createRouterApp({
    settings,
    directory,
    hub,
    access: {
      apiKeys: await SecretSet.create(settings.apiKeys),
      adminKeys: await SecretSet.create(settings.adminKeys),
      localStack: isLoopbackListen(settings.listen.host),
      statusPublic: settings.statusPublic,
    },
    metrics,
    demand,
    load,
    log,
    routerId,
    body: { ...settings.http.body, budget },
    cache,
    drains,
    relay: relay?.client,
    replay: new ReplayPolicy(settings.replay),
    startedAt: Date.now(),
    workerAuth,
    fetch: opts.fetch,
  });
  const server = await serveRouter(
    (req, info) => app.fetch(req, info),
    settings.listen,
    settings.http,
    settings.server,
  );
  const addr = server.addr;
  opts.onListen?.(addr);
  log("info", "router listening", {
    host: addr.hostname,
    port: addr.port,
    version: VERSION,
    router_id: routerId,
    server: server.kind,
    directory: directory.kind,
    client_auth: settings.apiKeys.length > 0 ? "api-keys" : "open",
    admin_auth: settings.adminKeys.length > 0
      ? "admin-keys"
      : isLoopbackListen(settings.listen.host)
      ? "local"
      : "none",
    default_machine_profile: settings.pools.defaultMachineProfile,
  });
  let closing: Promise<void> | undefined;
  const host = addr.hostname === "0.0.0.0" ? "127.0.0.1" : addr.hostname;
  return {
    port: addr.port,
    url: `http://${host.includes(":") ? `[${host}]` : host}:${addr.port}`,
    routerId,
    directory,
    metrics,
    cache,
    finished: server.finished,
    close: () => {
      closing ??= (async () => {
        // Relayed requests being served finish before the worker sockets close.
        await relay?.inbox.close();
        await hub.close();
        cache?.close();
        await drains?.close();
        await demand.close();
        await cache?.tier?.flush();
        await server.shutdown();
        await closeDirectory();
      })();
      return closing;
    },
  };
}
