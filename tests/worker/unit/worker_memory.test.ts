/** What a worker reports to the router as its memory: its own, never the host's. */
import assert from "node:assert/strict";
import { workerMemory } from "#worker/telemetry/worker_memory.ts";
import type { GpuReading } from "@svc/worker/gpu";

const gpu = (used: number, total: number): GpuReading => ({
  index: 0,
  name: "NVIDIA L4",
  gpu_type: "l4",
  utilization_percent: 0,
  memory_used_bytes: used,
  memory_total_bytes: total,
  temperature_c: 40,
});

Deno.test("worker memory: RSS against the budget on CPU, the GPUs' memory on CUDA", () => {
  const cpu = workerMemory({ device: "cpu", rssBytes: 300, budgetTotalBytes: 8000, gpus: [] });
  assert.deepEqual(cpu, { usedBytes: 300, totalBytes: 8000 });
  // A CPU worker on a GPU machine still reports its own RSS.
  const cpuOnGpu = workerMemory({
    device: "cpu",
    rssBytes: 300,
    budgetTotalBytes: 8000,
    gpus: [gpu(5, 10)],
  });
  assert.deepEqual(cpuOnGpu, { usedBytes: 300, totalBytes: 8000 });
  const cuda = workerMemory({
    device: "cuda",
    rssBytes: 300,
    budgetTotalBytes: 8000,
    gpus: [gpu(5, 10), gpu(7, 10)],
  });
  assert.deepEqual(cuda, { usedBytes: 12, totalBytes: 20 });
  // Before the first GPU reading: RSS rather than nothing.
  const early = workerMemory({ device: "cuda", rssBytes: 300, budgetTotalBytes: 8000, gpus: [] });
  assert.deepEqual(early, { usedBytes: 300, totalBytes: 8000 });
});
