/**
 * `deno task gpu:setup`: install ONNX Runtime's CUDA execution provider for onnxruntime-node, the
 * libraries its npm package does not ship. `npm ci` runs with `ignore-scripts` (.npmrc), so the
 * package's own install script, which fetches them, never ran; this task runs that script on
 * purpose (`node <package>/script/install.js --onnxruntime-node-install`, what the worker image
 * does at build time) and then checks the result: the provider's files, the shared
 * libraries they need (`ldd`), the GPUs (`nvidia-smi`). `--check` only reports; `--dry-run` says
 * what it would run. docs/gpu.md tells the whole set-up.
 */
import { parseArgs } from "node:util";
import { join } from "node:path";
import {
  CUDA_PROVIDER_FILES,
  defaultOrtPackageDir,
  missingProviderFiles,
  nodePlatform,
  ortBinaryDir,
} from "@svc/worker/cuda";
import { queryGpus } from "@svc/worker/gpu";

const HELP = `usage: npx deno task gpu:setup [--check | --dry-run] [--ort-dir DIR]

Installs ONNX Runtime's CUDA execution provider for the worker (linux x64): the libraries
${CUDA_PROVIDER_FILES.join(", ")} (and the TensorRT one)
that the onnxruntime-node npm package does not ship. It runs that package's own install script,
  node node_modules/onnxruntime-node/script/install.js --onnxruntime-node-install
which downloads Microsoft.ML.OnnxRuntime.Gpu.Linux (the same version) from NuGet (api.nuget.org;
a proxy through GLOBAL_AGENT_HTTPS_PROXY) and copies the files next to libonnxruntime.so.1, where
ONNX Runtime loads them. Then it checks them: the provider's files, the shared libraries they need
(ldd: the NVIDIA driver's, CUDA 12's, cuDNN 9's) and the GPUs (nvidia-smi).

  --check        only report what is there; exit 0 when CUDA can be used, 1 when not
  --dry-run      report, and say what it would run; change nothing
  --ort-dir DIR  the onnxruntime-node package (default: node_modules/onnxruntime-node)

Then start the worker with SVC_DEVICE=cuda (it refuses to start when the provider cannot start).
The whole set-up: docs/gpu.md.`;

/** What is installed, as the report lines and whether CUDA can be used. */
export interface GpuReport {
  lines: string[];
  ready: boolean;
  providerInstalled: boolean;
}

/** Shared libraries a file needs that the loader cannot find (`ldd`); undefined: not checked. */
async function unresolvedLibraries(file: string): Promise<string[] | undefined> {
  try {
    const out = await new Deno.Command("ldd", {
      args: [file],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).output();
    // Not a shared library it can read (a damaged download): nothing was checked.
    if (!out.success) return undefined;
    const text = new TextDecoder().decode(out.stdout);
    return [...text.matchAll(/^\s*(\S+)\s+=>\s+not found/gm)].map((m) => m[1]);
  } catch {
    return undefined;
  }
}

/** Report on the provider in `packageDir`, the libraries it needs and the GPUs. */
export async function gpuReport(packageDir: string): Promise<GpuReport> {
  const dir = ortBinaryDir(packageDir);
  const version = await Deno.readTextFile(join(packageDir, "package.json"))
    .then((t) => String(JSON.parse(t).version))
    .catch(() => "unknown");
  const lines = [`onnxruntime-node ${version} at ${packageDir}`];
  const missing = await missingProviderFiles(dir);
  const providerInstalled = missing.length === 0;
  lines.push(
    providerInstalled
      ? `CUDA provider: installed in ${dir}`
      : `CUDA provider: not installed (${missing.join(", ")} missing in ${dir})`,
  );
  let libsOk = false;
  if (providerInstalled) {
    const unresolved = await unresolvedLibraries(join(dir, "libonnxruntime_providers_cuda.so"));
    libsOk = unresolved?.length === 0;
    lines.push(
      unresolved === undefined
        ? "libraries it needs: not checked (ldd could not read the provider)"
        : unresolved.length === 0
        ? "libraries it needs: all found (ldd)"
        : `libraries it needs: missing ${unresolved.join(", ")} (install CUDA 12 and cuDNN 9, ` +
          "or put their directories on LD_LIBRARY_PATH)",
    );
  }
  const gpus = await queryGpus().catch(() => []);
  lines.push(
    gpus.length > 0
      ? `GPUs: ${gpus.length} (${[...new Set(gpus.map((g) => g.name))].join(", ")})`
      : "GPUs: none found (nvidia-smi missing or no NVIDIA driver)",
  );
  return { lines, ready: providerInstalled && libsOk && gpus.length > 0, providerInstalled };
}

/** The install script's error as one line (it ends in a stack trace). */
export function installFailure(stderr: string): string {
  const lines = stderr.split("\n").map((l) => l.trim()).filter((l) => l.length > 0);
  const error = lines.find((l) => /^(\w*Error|Error):/.test(l)) ?? lines.at(-1) ?? "no output";
  return error.replace(/\s+/g, " ");
}

/** Run the task; returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let values: { check?: boolean; "dry-run"?: boolean; "ort-dir"?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        check: { type: "boolean", default: false },
        "dry-run": { type: "boolean", default: false },
        "ort-dir": { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    }));
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  const { os, arch } = nodePlatform();
  if (os !== "linux" || arch !== "x64") {
    console.error(
      `gpu:setup: onnxruntime-node has a CUDA provider for linux x64 only (this is ${os} ${arch})`,
    );
    return 1;
  }
  const packageDir = values["ort-dir"] ?? defaultOrtPackageDir();
  const script = join(packageDir, "script", "install.js");
  const before = await gpuReport(packageDir);
  for (const l of before.lines) console.log(l);
  if (values.check) return before.ready ? 0 : 1;
  // The bare flag forces the install. `=cuda12` reads as "no flag" in the script's own parser
  // (1.30: its default case returns nothing), and without a flag the script quietly does nothing
  // when npm's environment says it runs inside its own package (npm_config_local_prefix): under
  // `npx deno task gpu:setup` it exited 0 having installed nothing.
  const command = `node ${script} --onnxruntime-node-install`;
  if (values["dry-run"]) {
    console.log(
      before.providerInstalled
        ? `would run nothing: the provider is installed (to reinstall: ${command})`
        : `would run: ${command}`,
    );
    return 0;
  }
  if (before.providerInstalled) {
    console.log("nothing to install");
    return before.ready ? 0 : 1;
  }
  console.log(`running: ${command}`);
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("node", {
      args: [script, "--onnxruntime-node-install"],
      cwd: packageDir,
      stdin: "null",
      stdout: "inherit",
      stderr: "piped",
    }).output();
  } catch (err) {
    console.error(`gpu:setup: cannot run node (${(err as Error).message}): it comes with npm`);
    return 1;
  }
  if (!out.success) {
    const why = installFailure(new TextDecoder().decode(out.stderr));
    console.error(
      `gpu:setup: the install script failed (exit ${out.code}): ${why}; it needs https access ` +
        "to api.nuget.org (or a proxy in GLOBAL_AGENT_HTTPS_PROXY)",
    );
    return 1;
  }
  const after = await gpuReport(packageDir);
  for (const l of after.lines.slice(1)) console.log(l);
  if (!after.providerInstalled) {
    console.error("gpu:setup: the install script finished, but the provider's files are missing");
    return 1;
  }
  return after.ready ? 0 : 1;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
