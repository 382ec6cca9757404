/**
 * Process metrics that are correct under Deno. prom-client's `collectDefaultMetrics` reads
 * Node-only sources and reports zeros here, so these come from Deno's own APIs instead:
 * resident memory (`Deno.memoryUsage().rss`), V8 heap, uptime, and event-loop lag from a timer.
 */
import client from "prom-client";
import { EventLoopLagMonitor } from "./event_loop_lag.ts";

/** A point-in-time reading of the process (also shown in the status stream). */
export interface ProcessSnapshot {
  rss_bytes: number;
  heap_used_bytes: number;
  uptime_seconds: number;
  event_loop_lag_ms: number;
}

/** Handle on the registered process metrics. */
export interface ProcessMetrics {
  /** Current readings, without waiting for a scrape. */
  snapshot(): ProcessSnapshot;
  /** Stop the lag sampler (the worker's close()). */
  stop(): void;
}

/** Lag buckets (seconds): a healthy loop stays under a few ms; inference on it would show seconds. */
const LAG_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Register the process series on `registry` and start the lag sampler. */
export function registerProcessMetrics(
  registry: client.Registry,
  opts: { startedAtMs: number; lagIntervalMs?: number },
): ProcessMetrics {
  const lagHistogram = new client.Histogram({
    name: "svc_event_loop_lag_seconds",
    help: "Event-loop lag: how late a timer fired, sampled every 100 ms",
    buckets: LAG_BUCKETS,
    registers: [registry],
  });
  const monitor = new EventLoopLagMonitor({
    intervalMs: opts.lagIntervalMs,
    onSample: (s) => lagHistogram.observe(s),
  });
  const uptime = () => (Date.now() - opts.startedAtMs) / 1000;
  // Gauges read at scrape time through collect(), so every scrape sees current values.
  new client.Gauge({
    name: "process_resident_memory_bytes",
    help: "Resident set size of the process in bytes",
    registers: [registry],
    collect() {
      this.set(Deno.memoryUsage().rss);
    },
  });
  new client.Gauge({
    name: "process_heap_used_bytes",
    help: "V8 heap in use, in bytes",
    registers: [registry],
    collect() {
      this.set(Deno.memoryUsage().heapUsed);
    },
  });
  new client.Gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since the Unix epoch, in seconds",
    registers: [registry],
  }).set(opts.startedAtMs / 1000);
  new client.Gauge({
    name: "svc_process_uptime_seconds",
    help: "Seconds since the worker started",
    registers: [registry],
    collect() {
      this.set(uptime());
    },
  });
  new client.Gauge({
    name: "svc_event_loop_lag_last_seconds",
    help: "The latest event-loop lag sample, in seconds",
    registers: [registry],
    collect() {
      this.set(monitor.lastSeconds);
    },
  });
  monitor.start();
  return {
    snapshot() {
      const mem = Deno.memoryUsage();
      return {
        rss_bytes: mem.rss,
        heap_used_bytes: mem.heapUsed,
        uptime_seconds: uptime(),
        event_loop_lag_ms: Math.round(monitor.lastSeconds * 1e5) / 100,
      };
    },
    stop: () => monitor.stop(),
  };
}
