/** Memory pressure readings used for eviction decisions. */

/** Returns used memory as a percentage of the device's total. */
export type MemoryProbe = () => { usedPercent: number; usedBytes: number; totalBytes: number };

/** System RAM pressure (CPU device). GPU memory comes from the telemetry module when present. */
export const systemMemoryProbe: MemoryProbe = () => {
  const m = Deno.systemMemoryInfo();
  const used = m.total - m.available;
  return { usedPercent: (used / m.total) * 100, usedBytes: used, totalBytes: m.total };
};

/** Total size in bytes of the given files (missing files count as 0). */
export async function filesSize(paths: string[]): Promise<number> {
  let total = 0;
  for (const p of paths) {
    try {
      total += (await Deno.stat(p)).size;
    } catch {
      // A file that vanished does not hold memory.
    }
  }
  return total;
}
