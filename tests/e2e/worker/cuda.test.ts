/**
 * A worker process told to use CUDA on a machine without ONNX Runtime's CUDA provider: with
 * SVC_DEVICE=cuda it stops at start with one line naming the fix; with SVC_DEVICE=auto on a
 * machine whose nvidia-smi (a stand-in) shows a GPU it serves on the CPU and names the fix.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { missingProviderFiles, nodePlatform, ortBinaryDir } from "@svc/worker/cuda";
import { Proc } from "../procs.ts";
import { taskArgs } from "../start/tasks.ts";
import { ensureFixtures } from "@svc/fixture-models";

const LINUX_X64 = nodePlatform().os === "linux" && nodePlatform().arch === "x64";
/** Whether this checkout has the provider installed (then the failure paths cannot be shown). */
const INSTALLED = (await missingProviderFiles(ortBinaryDir())).length === 0;

Deno.test({
  name:
    "cuda: a worker process with SVC_DEVICE=cuda and no provider stops at start: one line, the fix",
  ignore: INSTALLED || !LINUX_X64,
  fn: async () => {
    const fx = await ensureFixtures();
    const proc = new Proc("cuda-worker", await taskArgs("worker"), {
      SVC_DEVICE: "cuda",
      SVC_HOST: "127.0.0.1",
      SVC_PORT: "0",
      SVC_MODELS_DIR: `${fx}/models`,
      SVC_CLUSTER_CACHE: `${fx}/cache`,
      SVC_HUB_DISABLED: "1",
    });
    try {
      const st = await proc.status;
      await proc.stop(1000);
      assert.equal(st.code, 2, proc.tail());
      const failed = proc.lines.filter((l) => l.startsWith("worker failed to start"));
      assert.equal(failed.length, 1, proc.tail());
      assert.match(
        failed[0],
        /^worker failed to start: SVC_DEVICE=cuda, but ONNX Runtime's CUDA provider is not installed \(.*libonnxruntime_providers_cuda\.so.* missing in .*\): run npx deno task gpu:setup \(docs\/gpu\.md\)$/,
      );
      assert.ok(!proc.lines.some((l) => /worker (listening|ready)/.test(l)), proc.tail());
    } finally {
      await proc.kill().catch(() => {});
    }
  },
});

Deno.test({
  name: "cuda: SVC_DEVICE=auto with a GPU but no provider serves on the CPU and names the fix",
  ignore: INSTALLED || !LINUX_X64,
  fn: async () => {
    const fx = await ensureFixtures();
    // An nvidia-smi that reports one L4, found first on PATH.
    const bin = await Deno.makeTempDir({ prefix: "svc-fake-smi-" });
    await Deno.writeTextFile(
      join(bin, "nvidia-smi"),
      "#!/bin/sh\necho '0, NVIDIA L4, 3, 512, 23034, 41'\n",
    );
    await Deno.chmod(join(bin, "nvidia-smi"), 0o755);
    const proc = new Proc("auto-worker", await taskArgs("worker"), {
      PATH: `${bin}:${Deno.env.get("PATH") ?? ""}`,
      SVC_DEVICE: "auto",
      SVC_HOST: "127.0.0.1",
      SVC_PORT: "0",
      SVC_MODELS_DIR: `${fx}/models`,
      SVC_CLUSTER_CACHE: `${fx}/cache`,
      SVC_HUB_DISABLED: "1",
      SVC_MODEL_FILTER: "fixture/dense",
    });
    try {
      const port = (await proc.waitForLine(/worker listening .*port=(\d+)/, 60_000))[1];
      const warning = proc.lines.find((l) => l.includes("SVC_DEVICE=auto: GPU found"));
      assert.ok(warning, proc.tail());
      assert.match(warning, /gpus=1 .*run npx deno task gpu:setup/);
      const res = await fetch(`http://127.0.0.1:${port}/v1/encode/fixture/dense`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ items: [{ text: "on the CPU" }] }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
    } finally {
      await proc.stop(10_000);
      await Deno.remove(bin, { recursive: true });
    }
  },
});
