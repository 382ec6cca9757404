/** The router's metrics (plain prom-client, capped): names, labels and buckets in one place. */
import { VERSION } from "@svc/shared/version";
import { DURATION_SERIES, REQUESTS_SERIES } from "@svc/shared/status/request_series";
import { CappedCounter, CappedGauge, CappedHistogram, MetricsRegistry } from "./series.ts";
import { FleetModelSeries } from "./fleet_models.ts";

/** Latency buckets (seconds): sub-millisecond router overhead up to multi-minute model loads. */
const LATENCY_BUCKETS = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
  120,
];

/** Every metric the router exposes on /metrics. */
export interface RouterMetrics {
  registry: MetricsRegistry;
  requests: CappedCounter<"endpoint" | "status" | "machine_profile">;
  duration: CappedHistogram<"endpoint">;
  /**
   * The workers' `svc_requests_total` as this router saw the answers: every forwarded model
   * request, so the fleet's counts summed over its workers.
   */
  svcRequests: CappedCounter<typeof REQUESTS_SERIES.labelNames[number]>;
  /**
   * The workers' `svc_request_duration_seconds`: `total` as the client saw it through the router,
   * the other phases from the worker's timing headers.
   */
  svcDuration: CappedHistogram<typeof DURATION_SERIES.labelNames[number]>;
  /**
   * The workers' model series (`svc_queue_depth`, `svc_model_loaded`, `svc_model_memory_bytes`,
   * `svc_tokens_processed_total`, `svc_batch_size`), from their status; filled by a collector.
   */
  models: FleetModelSeries;
  /** `affinity`: loaded | loading | none. */
  upstream: CappedCounter<"worker_id" | "pool" | "bundle" | "affinity">;
  /** `kind`: unreachable | dropped | timeout | draining. */
  upstreamErrors: CappedCounter<"worker_id" | "kind">;
  retries: CappedCounter<"reason">;
  /**
   * Requests relayed through KV between router instances. `side`: asked (sent for a worker held
   * by another instance) | served (for another instance); `outcome`: the attempt's kind.
   */
  relay: CappedCounter<"side" | "outcome">;
  provisioning: CappedCounter<"machine_profile" | "bundle">;
  /** Filled by a collector. */
  pendingDemand: CappedGauge<"machine_profile" | "bundle">;
  /** `state`: serving | draining; filled by a collector. */
  workers: CappedGauge<"pool" | "machine_profile" | "bundle" | "state">;
  /**
   * `result`: registered | unauthorized | invalid | protocol_mismatch | timeout | id_in_use |
   * rate_limited | fleet_full.
   */
  connections: CappedCounter<"result">;
  /** `result`: ok | error. */
  webhook: CappedCounter<"result">;
  /** Request-body bytes held against `SVC_MAX_INFLIGHT_BODY_BYTES`; set by a collector. */
  bodyBytesHeld: CappedGauge;
  /** `result`: hit | coalesced | miss | bypass. */
  cacheRequests: CappedCounter<"result">;
  /** Bytes the result cache holds, as `SVC_RESULT_CACHE_BYTES` counts them; set by a collector. */
  cacheBytes: CappedGauge;
}

/** Create the router's metrics in a fresh registry. */
export function createRouterMetrics(): RouterMetrics {
  const registry = new MetricsRegistry();
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new CappedCounter<L>(registry.registry, { name, help, labelNames });
  const gauge = <L extends string = never>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
  ) => new CappedGauge<L>(registry.registry, { name, help, labelNames });
  const started = Date.now();
  gauge("svc_router_info", "Router release", ["version"]).set({ version: VERSION }, 1);
  const uptime = gauge("svc_router_uptime_seconds", "Seconds since this router process started");
  const heap = gauge("svc_router_heap_used_bytes", "V8 heap in use by this router process");
  registry.onCollect(() => {
    uptime.set({}, Math.round((Date.now() - started) / 1000));
    try {
      heap.set({}, Deno.memoryUsage().heapUsed);
    } catch {
      // Not every platform exposes it; the gauge is then simply absent.
    }
  });
  return {
    registry,
    requests: counter("svc_router_requests_total", "Requests answered by the router", [
      "endpoint",
      "status",
      "machine_profile",
    ]),
    duration: new CappedHistogram(registry.registry, {
      name: "svc_router_request_duration_seconds",
      help: "Router request latency, including the worker's time",
      labelNames: ["endpoint"],
      buckets: LATENCY_BUCKETS,
    }),
    svcRequests: counter(REQUESTS_SERIES.name, REQUESTS_SERIES.help, REQUESTS_SERIES.labelNames),
    svcDuration: new CappedHistogram(registry.registry, DURATION_SERIES),
    models: new FleetModelSeries(registry),
    upstream: counter("svc_router_upstream_requests_total", "Requests forwarded to workers", [
      "worker_id",
      "pool",
      "bundle",
      "affinity",
    ]),
    upstreamErrors: counter("svc_router_upstream_errors_total", "Failed forwards to workers", [
      "worker_id",
      "kind",
    ]),
    retries: counter("svc_router_retries_total", "Requests retried on another worker", [
      "reason",
    ]),
    relay: counter(
      "svc_router_relay_requests_total",
      "Requests relayed through KV between router instances, by side (asked, served) and outcome",
      ["side", "outcome"],
    ),
    provisioning: counter(
      "svc_router_provisioning_responses_total",
      "Requests answered 202 (or waited) because their pool had no serving worker",
      ["machine_profile", "bundle"],
    ),
    pendingDemand: gauge(
      "svc_router_pending_demand",
      "Requests for a pool without a serving worker in the demand window (autoscaler signal)",
      ["machine_profile", "bundle"],
    ),
    workers: gauge("svc_router_workers", "Registered workers", [
      "pool",
      "machine_profile",
      "bundle",
      "state",
    ]),
    connections: counter("svc_router_worker_connections_total", "Worker connection attempts", [
      "result",
    ]),
    webhook: counter(
      "svc_router_provision_webhook_total",
      "Demand notices posted to the webhook",
      ["result"],
    ),
    bodyBytesHeld: gauge(
      "svc_router_body_bytes_held",
      "Request-body bytes the router holds (read, waiting, or being forwarded until answered)",
    ),
    cacheRequests: counter(
      "svc_router_cache_requests_total",
      "Model requests by what the result cache did: hit (stored answer), coalesced (the answer " +
        "of an identical request in flight), miss (passed on to routing), bypass (Cache-Control)",
      ["result"],
    ),
    cacheBytes: gauge(
      "svc_router_cache_bytes",
      "Bytes held by the result cache (bodies, headers, keys and per-entry overhead)",
    ),
  };
}
