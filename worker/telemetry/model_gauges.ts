/** Per-model gauges (loaded, memory, queue depth) refreshed from the registry at scrape time. */
import type { WorkerContext } from "../server/context.ts";

/** Set `svc_model_loaded`, `svc_model_memory_bytes` and `svc_queue_depth` for every model seen. */
export function refreshModelGauges(ctx: WorkerContext): void {
  const device = ctx.registry.deviceName;
  for (const s of ctx.registry.statuses()) {
    // The unit name: a profile running another weights file is its own series.
    const model = s.name;
    ctx.metrics.modelLoaded.set({ model, device }, s.state === "loaded" ? 1 : 0);
    ctx.metrics.modelMemory.set({ model, device }, s.memoryBytes);
    ctx.metrics.queueDepth.set({ model }, s.queueDepth);
  }
}
