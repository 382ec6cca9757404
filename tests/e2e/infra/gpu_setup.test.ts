/**
 * `deno task gpu:setup`, as far as it runs without a GPU and without NuGet: the report, the dry
 * run, the real install script failing to download (it is pointed at a closed proxy port, so the
 * test never downloads even where NuGet is reachable) and said in one line, and a provider that is
 * present but not a library ldd can read. What it cannot do here: download the provider, and check
 * a real provider's libraries and a GPU.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../procs.ts";
import { runTask } from "../start/tasks.ts";
import { CUDA_PROVIDER_FILES, nodePlatform } from "@svc/worker/cuda";

const LINUX_X64 = nodePlatform().os === "linux" && nodePlatform().arch === "x64";

/** A copy of the onnxruntime-node package's install script (no native files), its deps linked. */
async function packageCopy(): Promise<{ root: string; pkg: string }> {
  const root = await Deno.makeTempDir({ prefix: "svc-gpu-setup-" });
  const pkg = join(root, "node_modules", "onnxruntime-node");
  const from = join(ROOT, "node_modules", "onnxruntime-node");
  await Deno.mkdir(join(pkg, "script"), { recursive: true });
  await Deno.copyFile(join(from, "package.json"), join(pkg, "package.json"));
  for await (const e of Deno.readDir(join(from, "script"))) {
    await Deno.copyFile(join(from, "script", e.name), join(pkg, "script", e.name));
  }
  for (const dep of ["global-agent", "adm-zip", "onnxruntime-common"]) {
    await Deno.symlink(join(ROOT, "node_modules", dep), join(root, "node_modules", dep));
  }
  return { root, pkg };
}

Deno.test({
  name: "gpu:setup: report, dry run, and an install that cannot download says so in one line",
  ignore: !LINUX_X64,
  fn: async () => {
    const { root, pkg } = await packageCopy();
    // A closed proxy port: the script's downloads fail at once, wherever this runs.
    const env = { GLOBAL_AGENT_HTTPS_PROXY: "http://127.0.0.1:9", PATH: Deno.env.get("PATH")! };
    try {
      const dry = await runTask("gpu:setup", ["--dry-run", "--ort-dir", pkg], env);
      assert.equal(dry.code, 0, dry.stderr);
      assert.match(dry.stdout, /^onnxruntime-node 1\.30\.0 at /m);
      assert.match(dry.stdout, /CUDA provider: not installed \(libonnxruntime_providers_shared/);
      assert.match(
        dry.stdout,
        /would run: node .*script\/install\.js --onnxruntime-node-install$/m,
      );

      const check = await runTask("gpu:setup", ["--check", "--ort-dir", pkg], env);
      assert.equal(check.code, 1, "not ready without the provider");

      const install = await runTask("gpu:setup", ["--ort-dir", pkg], env, 120_000);
      assert.equal(install.code, 1, install.stdout);
      const errors = install.stderr.trim().split("\n");
      assert.equal(errors.length, 1, install.stderr);
      assert.match(
        errors[0],
        /^gpu:setup: the install script failed \(exit 1\): Error: connect ECONNREFUSED 127\.0\.0\.1:9; it needs https access to api\.nuget\.org/,
      );

      // Files that are there but are no library: installed, not ready, and it says why.
      const bin = join(pkg, "bin", "napi-v6", "linux", "x64");
      await Deno.mkdir(bin, { recursive: true });
      for (const f of CUDA_PROVIDER_FILES) await Deno.writeFile(join(bin, f), new Uint8Array(8));
      const present = await runTask("gpu:setup", ["--check", "--ort-dir", pkg], env);
      assert.equal(present.code, 1);
      assert.match(present.stdout, /CUDA provider: installed in /);
      assert.match(present.stdout, /libraries it needs: not checked \(ldd could not read/);
      const again = await runTask("gpu:setup", ["--dry-run", "--ort-dir", pkg], env);
      assert.match(again.stdout, /would run nothing: the provider is installed/);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});
