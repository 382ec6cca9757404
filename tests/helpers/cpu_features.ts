/**
 * The CPU a numeric test ran on, for its failure messages: int8 results differ between x86 CPUs
 * with VNNI (AVX-512 or AVX) and without (AVX2's saturating u8·s8 pairs), so a failed comparison
 * must say which kind it saw. The unit tier may not read /proc/cpuinfo (Deno wants --allow-all
 * for /proc), so tests/ci.ts reads it once and hands the flags down in `TEST_CPU_FLAGS`.
 */
import { cpus } from "node:os";

/** The flags that decide which int8 kernels ONNX Runtime runs on x86. */
export const INT8_FLAGS = ["avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8"] as const;

/** The environment variable tests/ci.ts fills with the CPU's int8-relevant flags. */
export const CPU_FLAGS_ENV = "TEST_CPU_FLAGS";

/** The int8-relevant flags of a /proc/cpuinfo text (first `flags` line), in INT8_FLAGS order. */
export function int8FlagsOf(cpuinfo: string): string[] {
  const line = /^flags\s*:\s*(.+)$/m.exec(cpuinfo);
  if (!line) return [];
  const have = new Set(line[1].trim().split(/\s+/));
  return INT8_FLAGS.filter((f) => have.has(f));
}

function readCpuinfo(): string | undefined {
  try {
    return Deno.readTextFileSync("/proc/cpuinfo");
  } catch {
    return undefined;
  }
}

let cached: string | undefined;

/**
 * One line naming the CPU and its int8 flags, e.g. `AMD EPYC 7B13; flags avx2 (no VNNI)`, for
 * failure messages of numeric comparisons.
 */
export function cpuFeatures(): string {
  if (cached !== undefined) return cached;
  let flags: string[] | undefined;
  try {
    const given = Deno.env.get(CPU_FLAGS_ENV);
    if (given !== undefined) flags = given.split(/[\s,]+/).filter(Boolean);
  } catch {
    // No env permission: try the file.
  }
  const info = flags === undefined ? readCpuinfo() : undefined;
  if (info !== undefined) flags = int8FlagsOf(info);
  let model = "unknown CPU";
  try {
    model = cpus()[0]?.model?.trim() || model;
  } catch {
    // No sys permission: the flags alone.
  }
  const vnni = flags?.some((f) => f.endsWith("vnni") || f === "amx_int8");
  const tail = flags === undefined
    ? `flags unknown (set ${CPU_FLAGS_ENV}, or run through tests/ci.ts)`
    : `flags ${flags.join(" ") || "none of " + INT8_FLAGS.join("/")}${vnni ? "" : " (no VNNI)"}`;
  cached = `${Deno.build.arch} ${model}; ${tail}`;
  return cached;
}
