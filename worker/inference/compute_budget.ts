/**
 * The worker's one compute budget on CPU: how many cores this process may really use (cgroup CPU
 * quota, CPU affinity, else what the runtime reports), and a gate shared by every inference thread
 * so that ONNX runs of different models take the cores in turn instead of oversubscribing them.
 *
 * Why a gate and not a split: every session gets the whole budget as intra-op threads, so one busy
 * model uses all cores; two busy models would each start that many threads at once and thrash. The
 * gate lets one run hold the cores at a time (runs are 1–50 ms, so turns are short and fair enough);
 * a single model never waits on it.
 */

/** Where the usable CPU count came from (reported in logs and metrics). */
export type CpuSource = "setting" | "cgroup" | "affinity" | "runtime";

/** The CPU count this process may use and the narrowest limit that set it. */
export interface UsableCpus {
  cpus: number;
  source: CpuSource;
}

/**
 * Cores granted by a cgroup v2 `cpu.max` line ("max 100000" or "150000 100000"); null when there
 * is no quota. A fractional quota rounds down (at least 1): a thread more than the quota only gets
 * throttled.
 */
export function cgroupV2Cpus(cpuMax: string): number | null {
  const [quota, period] = cpuMax.trim().split(/\s+/);
  if (quota === undefined || quota === "max") return null;
  return quotaCpus(Number(quota), Number(period ?? "100000"));
}

/** Cores from cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us` (quota -1: none). */
export function cgroupV1Cpus(quotaUs: string, periodUs: string): number | null {
  return quotaCpus(Number(quotaUs.trim()), Number(periodUs.trim()));
}

function quotaCpus(quota: number, period: number): number | null {
  if (!Number.isFinite(quota) || !Number.isFinite(period) || quota <= 0 || period <= 0) {
    return null;
  }
  return Math.max(1, Math.floor(quota / period));
}

/** CPUs in the `Cpus_allowed_list` line of /proc/self/status ("0-3,8,10-11"); null if absent. */
export function affinityCpus(procStatus: string): number | null {
  const line = procStatus.split("\n").find((l) => l.startsWith("Cpus_allowed_list:"));
  if (!line) return null;
  let n = 0;
  for (const part of line.slice(line.indexOf(":") + 1).trim().split(",")) {
    if (part === "") continue;
    const [a, b] = part.split("-").map(Number);
    if (!Number.isInteger(a) || (b !== undefined && !(Number.isInteger(b) && b >= a))) return null;
    n += b === undefined ? 1 : b - a + 1;
  }
  return n > 0 ? n : null;
}

/** Reads a text file, or null when it does not exist or cannot be read. */
export type ReadText = (path: string) => string | null;

function readTextOrNull(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

/**
 * The CPUs this process may use: the smallest of the cgroup quota (v2, else v1), the affinity
 * mask and the runtime's count (`navigator.hardwareConcurrency`, the fallback when /proc and /sys
 * say nothing, e.g. off Linux).
 */
export function usableCpus(
  read: ReadText = readTextOrNull,
  runtimeCpus: number = navigator.hardwareConcurrency,
): UsableCpus {
  let best: UsableCpus = { cpus: Math.max(1, Math.floor(runtimeCpus) || 1), source: "runtime" };
  const consider = (cpus: number | null, source: CpuSource) => {
    if (cpus !== null && cpus < best.cpus) best = { cpus, source };
  };
  const status = read("/proc/self/status");
  if (status !== null) consider(affinityCpus(status), "affinity");
  const v2 = read("/sys/fs/cgroup/cpu.max");
  if (v2 !== null) consider(cgroupV2Cpus(v2), "cgroup");
  else {
    const quota = read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
    const period = read("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
    if (quota !== null && period !== null) consider(cgroupV1Cpus(quota, period), "cgroup");
  }
  return best;
}

/** The worker's intra-op thread count: the setting when > 0, else the usable CPUs. */
export function computeThreads(setting: number, detect: () => UsableCpus = usableCpus): UsableCpus {
  return setting > 0 ? { cpus: setting, source: "setting" } : detect();
}

/** Longest a waiting run sleeps before it looks at the gate again. */
const RECHECK_MS = 5;

/**
 * A mutex over shared memory: one Int32 holding 0 (free) or the id of the thread that holds it;
 * every inference thread receives the cell and its own id. Waiting uses Atomics.waitAsync, so a
 * waiting thread still handles its messages. The id lets the main thread free the gate of a
 * thread it terminated or that crashed mid-run ({@link ComputeGate.releaseFor}).
 */
export class ComputeGate {
  readonly cell: Int32Array;
  readonly owner: number;

  constructor(cell: Int32Array = new Int32Array(new SharedArrayBuffer(4)), owner = 1) {
    if (!Number.isInteger(owner) || owner <= 0) throw new RangeError("owner must be > 0");
    this.cell = cell;
    this.owner = owner;
  }

  /** Free the gate if `owner` holds it (a thread that will never release it itself). */
  static releaseFor(cell: Int32Array, owner: number): void {
    if (Atomics.compareExchange(cell, 0, owner, 0) === owner) Atomics.notify(cell, 0, 1);
  }

  /**
   * Resolves once this thread holds the cores. The wait is also bounded by a short timer: a
   * pending waitAsync alone does not keep Deno's event loop alive, and the timer bounds a missed
   * wake-up to a few milliseconds.
   */
  async acquire(): Promise<void> {
    let seen: number;
    while ((seen = Atomics.compareExchange(this.cell, 0, 0, this.owner)) !== 0) {
      // Bounded too: a waiter left behind by the timer below would otherwise stay registered and
      // take the next notify meant for a thread that is really waiting.
      const w = Atomics.waitAsync(this.cell, 0, seen, RECHECK_MS);
      if (!w.async) continue;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([w.value, new Promise((r) => timer = setTimeout(r, RECHECK_MS))]);
      clearTimeout(timer);
    }
  }

  /** Give the cores to the next waiting run. */
  release(): void {
    ComputeGate.releaseFor(this.cell, this.owner);
  }

  /** Run `fn` holding the gate. */
  async hold<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }
}
