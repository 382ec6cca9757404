/** The router's Prometheus metrics (prom-client) and the collector that fills the fleet gauges. */
export { createRouterMetrics, type RouterMetrics } from "./router_metrics.ts";
export { collectFleetMetrics } from "./fleet_collector.ts";
export {
  CappedCounter,
  CappedGauge,
  CappedHistogram,
  type Labels,
  MAX_SERIES_PER_METRIC,
  MetricsRegistry,
} from "./series.ts";
