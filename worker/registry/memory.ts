/** Memory pressure readings used for eviction decisions. */

/** Returns used memory as a percentage of the device's total. */
export type MemoryProbe = () => { usedPercent: number; usedBytes: number; totalBytes: number };

/** System RAM pressure from the kernel's view of the whole machine. */
export const systemMemoryProbe: MemoryProbe = () => {
  const m = Deno.systemMemoryInfo();
  const used = m.total - m.available;
  return { usedPercent: (used / m.total) * 100, usedBytes: used, totalBytes: m.total };
};

/** Where cgroup v2 exposes a container's memory limit and usage. */
export interface CgroupFiles {
  max: string;
  current: string;
}

const CGROUP_V2: CgroupFiles = {
  max: "/sys/fs/cgroup/memory.max",
  current: "/sys/fs/cgroup/memory.current",
};

/**
 * A probe against a cgroup v2 memory limit, or undefined when there is no limit. Inside a
 * container the machine's RAM is not the budget: the kernel kills the process at `memory.max`.
 */
export function cgroupMemoryProbe(files: CgroupFiles = CGROUP_V2): MemoryProbe | undefined {
  const read = (path: string): string | undefined => {
    try {
      return Deno.readTextFileSync(path).trim();
    } catch {
      return undefined;
    }
  };
  const max = read(files.max);
  if (max === undefined || max === "max" || !/^\d+$/.test(max)) return undefined;
  const total = Number(max);
  if (read(files.current) === undefined || total <= 0) return undefined;
  return () => {
    const used = Number(read(files.current) ?? "0");
    return { usedPercent: (used / total) * 100, usedBytes: used, totalBytes: total };
  };
}

/** The container's limit when one is set, else the machine's RAM. */
export function memoryProbeFor(files?: CgroupFiles): MemoryProbe {
  return cgroupMemoryProbe(files) ?? systemMemoryProbe;
}

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
