/**
 * The memory a worker reports to its router (status frames, `/health`, the fleet page, `deno task
 * status`): its own, not the machine's. On CPU the process's resident set against its memory
 * budget (the container's limit, else the machine's RAM); on CUDA the GPUs' memory, where the
 * models live.
 */
import type { GpuReading } from "./gpu.ts";

/** Used and total bytes, and what they measure. */
export interface WorkerMemory {
  usedBytes: number;
  totalBytes: number;
}

/** The worker's memory on `device`; `gpus` may be empty before the first reading (then RSS). */
export function workerMemory(o: {
  device: string;
  rssBytes: number;
  budgetTotalBytes: number;
  gpus: readonly GpuReading[];
}): WorkerMemory {
  if (o.device === "cuda" && o.gpus.length > 0) {
    return {
      usedBytes: o.gpus.reduce((n, g) => n + g.memory_used_bytes, 0),
      totalBytes: o.gpus.reduce((n, g) => n + g.memory_total_bytes, 0),
    };
  }
  return { usedBytes: o.rssBytes, totalBytes: o.budgetTotalBytes };
}
