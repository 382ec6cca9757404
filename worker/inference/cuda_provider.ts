/**
 * ONNX Runtime's CUDA execution provider as onnxruntime-node 1.30 needs it: two libraries that
 * its npm package does not ship, loaded at session creation from the directory of
 * `libonnxruntime.so.1` (`<package>/bin/napi-v6/<platform>/<arch>/`). `npm ci` with
 * `ignore-scripts` never runs the package's install script, which would fetch them, so a worker
 * told to use CUDA checks for them at start (and `deno task gpu:setup` installs them). This module
 * only looks at files: it never loads ONNX Runtime (the main thread must not).
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The command that installs the provider (infra/gpu_setup.ts). */
export const GPU_SETUP_COMMAND = "npx deno task gpu:setup";

/** The libraries the CUDA provider loads from ONNX Runtime's own directory. */
export const CUDA_PROVIDER_FILES = [
  "libonnxruntime_providers_shared.so",
  "libonnxruntime_providers_cuda.so",
] as const;

/** The onnxruntime-node package of this checkout (node_modules beside deno.json). */
export function defaultOrtPackageDir(): string {
  return fileURLToPath(new URL("../../node_modules/onnxruntime-node", import.meta.url));
}

/** Node's names for this platform and CPU (`linux`, `x64`), as the package's folders use them. */
export function nodePlatform(): { os: string; arch: string } {
  const arch = Deno.build.arch === "x86_64" ? "x64" : Deno.build.arch === "aarch64" ? "arm64" : "";
  return { os: Deno.build.os === "windows" ? "win32" : Deno.build.os, arch };
}

/** Where ONNX Runtime's native libraries are, and so where it loads its providers from. */
export function ortBinaryDir(packageDir: string = defaultOrtPackageDir()): string {
  const { os, arch } = nodePlatform();
  return join(packageDir, "bin", "napi-v6", os, arch);
}

/** The provider files missing from `dir` (empty: installed). */
export async function missingProviderFiles(dir: string): Promise<string[]> {
  const missing: string[] = [];
  for (const f of CUDA_PROVIDER_FILES) {
    try {
      if (!(await Deno.stat(join(dir, f))).isFile) missing.push(f);
    } catch {
      missing.push(f);
    }
  }
  return missing;
}

/**
 * One line saying why CUDA cannot be used from `dir`, naming the command that fixes it; undefined
 * when the provider's files are there. Only linux x64 has a CUDA provider in onnxruntime-node 1.30.
 */
export async function cudaProviderProblem(
  dir: string = ortBinaryDir(),
): Promise<string | undefined> {
  const { os, arch } = nodePlatform();
  if (os !== "linux" || arch !== "x64") {
    return `onnxruntime-node 1.30 has a CUDA provider for linux x64 only (this is ${os} ${arch})`;
  }
  const missing = await missingProviderFiles(dir);
  if (missing.length === 0) return undefined;
  return `ONNX Runtime's CUDA provider is not installed (${missing.join(" and ")} missing in ` +
    `${dir}): run ${GPU_SETUP_COMMAND} (docs/gpu.md)`;
}

/** Values of SVC_ATTENTION_BACKEND (`flash_attention_2` is the specification's name of `flash`). */
export const ATTENTION_BACKENDS = [
  "auto",
  "flash",
  "flash_attention_2",
  "memory_efficient",
  "math",
] as const;

/** Which attention kernels a CUDA worker lets ONNX Runtime use. */
export type AttentionBackend = typeof ATTENTION_BACKENDS[number];

/**
 * ONNX Runtime's switches of its CUDA attention kernels (contrib_ops/cpu/bert/attention_common.h),
 * read when the provider's `sdpa_kernel` option is 0, and onnxruntime-node 1.30 always leaves it
 * 0: its binding hands the CUDA provider a device id and nothing else. `1` turns a kernel off;
 * the unfused (math) kernel cannot be turned off, so it is always the fallback.
 */
const ORT_ATTENTION_SWITCHES = {
  flash: "ORT_DISABLE_FLASH_ATTENTION",
  memoryEfficient: "ORT_DISABLE_MEMORY_EFFICIENT_ATTENTION",
  trtFused: "ORT_DISABLE_FUSED_ATTENTION",
  trtFlash: "ORT_DISABLE_TRT_FLASH_ATTENTION",
  trtCross: "ORT_DISABLE_FUSED_CROSS_ATTENTION",
} as const;

/**
 * The environment that makes ONNX Runtime's CUDA provider use `backend`'s attention kernels, what
 * `sdpa_kernel` would select where the binding passes it: `flash` keeps flash attention only,
 * `memory_efficient` the memory-efficient (cutlass) kernel only, `math` none (the unfused kernel),
 * each with the unfused one as fallback for shapes or types the kernel does not take. `auto` sets
 * nothing: ONNX Runtime's own choice, and any ORT_* variables the operator set stay in force.
 */
export function attentionEnvironment(backend: AttentionBackend): Record<string, string> {
  if (backend === "auto") return {};
  const keep = backend === "flash" || backend === "flash_attention_2"
    ? ORT_ATTENTION_SWITCHES.flash
    : backend === "memory_efficient"
    ? ORT_ATTENTION_SWITCHES.memoryEfficient
    : undefined;
  return Object.fromEntries(
    Object.values(ORT_ATTENTION_SWITCHES).map((name) => [name, name === keep ? "0" : "1"]),
  );
}

/**
 * Put `backend`'s switches into this process's environment (every inference thread's sessions
 * read it), before the first CUDA session. Returns what was set, for the log.
 */
export function applyAttentionBackend(
  backend: AttentionBackend,
  env: Pick<typeof Deno.env, "set"> = Deno.env,
): Record<string, string> {
  const vars = attentionEnvironment(backend);
  for (const [k, v] of Object.entries(vars)) env.set(k, v);
  return vars;
}
