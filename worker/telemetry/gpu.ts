/**
 * GPU detection and readings through `nvidia-smi --query-gpu=... --format=csv`. Machines without
 * an NVIDIA driver have no `nvidia-smi`: they report no GPUs and the machine profile `cpu`.
 * `normaliseGpuType` turns marketing names into the short pool names used by
 * `X-SVC-MACHINE-PROFILE` (h100, l4, a100-80gb, a10g, t4, ...).
 */

/** One GPU as the status stream and the fleet registration report it. */
export interface GpuReading {
  index: number;
  name: string;
  /** Normalised type, e.g. `h100`, `a100-80gb`, `l4`. */
  gpu_type: string;
  utilization_percent: number | null;
  memory_used_bytes: number;
  memory_total_bytes: number;
  temperature_c: number | null;
}

/** Fields asked of nvidia-smi, in the order the parser expects them. */
export const NVIDIA_SMI_FIELDS = [
  "index",
  "name",
  "utilization.gpu",
  "memory.used",
  "memory.total",
  "temperature.gpu",
] as const;

/** Arguments of the nvidia-smi call (values without units and header; the parser accepts both). */
export const NVIDIA_SMI_ARGS: string[] = [
  `--query-gpu=${NVIDIA_SMI_FIELDS.join(",")}`,
  "--format=csv,noheader,nounits",
];

/** Bound on one nvidia-smi run (it can hang on a wedged driver). */
export const NVIDIA_SMI_TIMEOUT_MS = 5000;

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

/** Memory in bytes from `81559`, `81559 MiB` or `80 GiB` (nvidia-smi reports MiB by default). */
function parseMemory(field: string): number | null {
  const m = /^([\d.]+)\s*(MiB|GiB|KiB|B)?$/i.exec(field.trim());
  if (!m) return null;
  const v = Number(m[1]);
  const unit = (m[2] ?? "MiB").toLowerCase();
  const scale = unit === "gib" ? GIB : unit === "kib" ? 1024 : unit === "b" ? 1 : MIB;
  return Math.round(v * scale);
}

/** A number from `35`, `35 %` or `40 C`; null for `[N/A]`, `[Not Supported]` and the like. */
function parseNumber(field: string): number | null {
  const m = /^(-?[\d.]+)\s*(%|C)?$/i.exec(field.trim());
  return m ? Number(m[1]) : null;
}

/**
 * Parse nvidia-smi CSV output (with or without the header line and units). Lines that do not
 * have the expected fields are skipped rather than guessed at.
 */
export function parseNvidiaSmiCsv(text: string): GpuReading[] {
  const out: GpuReading[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || /^index\s*,/i.test(line)) continue;
    // GPU names contain no commas, so a plain split is exact.
    const f = line.split(",").map((s) => s.trim());
    if (f.length < NVIDIA_SMI_FIELDS.length) continue;
    const index = Number(f[0]);
    if (!Number.isInteger(index)) continue;
    const total = parseMemory(f[4]) ?? 0;
    out.push({
      index,
      name: f[1],
      gpu_type: normaliseGpuType(f[1], total),
      utilization_percent: parseNumber(f[2]),
      memory_used_bytes: parseMemory(f[3]) ?? 0,
      memory_total_bytes: total,
      temperature_c: parseNumber(f[5]),
    });
  }
  return out;
}

/** Name patterns → type, most specific first (gh200 before h200, a10g before a10, l40s before l4). */
const GPU_PATTERNS: readonly [RegExp, string][] = [
  [/\bgh200\b/, "gh200"],
  [/\bgb200\b/, "gb200"],
  [/\bb200\b/, "b200"],
  [/\bb100\b/, "b100"],
  [/\bh200\b/, "h200"],
  [/\bh100\b/, "h100"],
  [/\bh800\b/, "h800"],
  [/\ba10g\b/, "a10g"],
  [/\ba10\b/, "a10"],
  [/\ba40\b/, "a40"],
  [/\ba30\b/, "a30"],
  [/\ba16\b/, "a16"],
  [/\bl40s\b/, "l40s"],
  [/\bl40\b/, "l40"],
  [/\bl4\b/, "l4"],
  [/\bt4\b/, "t4"],
  [/\bv100\b/, "v100"],
  [/\bp100\b/, "p100"],
  [/\bp4\b/, "p4"],
  [/\bk80\b/, "k80"],
];

/**
 * Normalise a GPU name to a pool name: `NVIDIA H100 80GB HBM3` → `h100`, `NVIDIA A100-SXM4-80GB`
 * → `a100-80gb`, `NVIDIA A10G` → `a10g`, `Tesla T4` → `t4`, `NVIDIA L4` → `l4`. The A100 comes in
 * two memory sizes that schedule differently, so its size is kept (from the name, else from the
 * memory total). Unknown names become a lower-case slug of the name without the vendor words.
 */
export function normaliseGpuType(name: string, memoryTotalBytes?: number): string {
  const n = name.toLowerCase().replace(/\b(nvidia|tesla|geforce|quadro)\b/g, " ").trim();
  if (/\ba100\b/.test(n)) {
    if (/\b80\s*gb\b/.test(n)) return "a100-80gb";
    if (/\b40\s*gb\b/.test(n)) return "a100-40gb";
    if (memoryTotalBytes && memoryTotalBytes > 0) {
      return memoryTotalBytes > 60 * GIB ? "a100-80gb" : "a100-40gb";
    }
    return "a100";
  }
  for (const [re, type] of GPU_PATTERNS) if (re.test(n)) return type;
  const rtxA = /\brtx\s*a(\d{4})\b/.exec(n);
  if (rtxA) return `rtx-a${rtxA[1]}`;
  const rtx = /\brtx\s*(\d{4})(\s*ti)?\b/.exec(n);
  if (rtx) return `rtx${rtx[1]}${rtx[2] ? "ti" : ""}`;
  const slug = n.replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 64);
  return slug === "" ? "unknown-gpu" : slug;
}

/** Run nvidia-smi once (bounded); its stdout, or undefined when it is not installed. */
async function runNvidiaSmi(timeoutMs: number): Promise<string | undefined> {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("nvidia-smi", {
      args: NVIDIA_SMI_ARGS,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already exited.
    }
  }, timeoutMs);
  try {
    const out = await child.output();
    if (!out.success) {
      const msg = new TextDecoder().decode(out.stderr).trim().slice(0, 200);
      throw new Error(`nvidia-smi failed (exit ${out.code}): ${msg}`);
    }
    return new TextDecoder().decode(out.stdout);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Read every GPU now. An empty list when there is no nvidia-smi (a CPU machine); throws when it
 * exists but fails, times out, or may not be run (the caller decides how loud to be).
 */
export async function queryGpus(timeoutMs: number = NVIDIA_SMI_TIMEOUT_MS): Promise<GpuReading[]> {
  const out = await runNvidiaSmi(timeoutMs);
  return out === undefined ? [] : parseNvidiaSmiCsv(out);
}

let inventory: Promise<GpuReading[]> | undefined;

/**
 * The machine's GPUs as first detected (one nvidia-smi run per process): for what does not
 * change while the process runs (device choice, machine profile). Live readings use queryGpus.
 */
export function gpuInventory(): Promise<GpuReading[]> {
  inventory ??= queryGpus().catch(() => []);
  return inventory;
}

/** Machine profile for a set of GPUs: the type of the first GPU, or `cpu` when there is none. */
export function machineProfileOfGpus(gpus: readonly GpuReading[]): string {
  return gpus.length > 0 ? gpus[0].gpu_type : "cpu";
}
