/**
 * A worker told to use CUDA finds out at start whether it can, and says what to run when it
 * cannot: the provider's files (pointed at an empty directory and at one that has them), the probe
 * session (run for real: on a machine without the provider it fails as every model would), the
 * start-up decision (`cuda` refuses, `auto` falls back with a warning); real worker processes:
 * tests/e2e/worker/cuda.test.ts. The CUDA success path (a GPU with its libraries) cannot run here.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  applyAttentionBackend,
  ATTENTION_BACKENDS,
  attentionEnvironment,
  CUDA_PROVIDER_FILES,
  cudaProviderProblem,
  GPU_SETUP_COMMAND,
  missingProviderFiles,
  nodePlatform,
  ortBinaryDir,
} from "@svc/worker/cuda";
import { PROBE_MODEL_BASE64, probeCuda } from "#worker/inference/cuda_probe.ts";
import { createWorker, StartupError } from "#worker/bootstrap.ts";
import { GraphBuilder } from "@svc/onnx/writer";
import { ensureFixtures } from "@svc/fixture-models";

const LINUX_X64 = nodePlatform().os === "linux" && nodePlatform().arch === "x64";
/** Whether this checkout has the provider installed (then the failure paths cannot be shown). */
const INSTALLED = (await missingProviderFiles(ortBinaryDir())).length === 0;

Deno.test({
  name: "cuda: an empty provider directory is named with the command that fills it",
  ignore: !LINUX_X64,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "svc-ort-bin-" });
    try {
      const problem = await cudaProviderProblem(dir);
      assert.ok(problem);
      for (const f of CUDA_PROVIDER_FILES) assert.ok(problem.includes(f), f);
      assert.ok(problem.includes(dir));
      assert.ok(problem.includes(`run ${GPU_SETUP_COMMAND}`));
      assert.equal(problem.split("\n").length, 1, "one line");
      for (const f of CUDA_PROVIDER_FILES) await Deno.writeFile(join(dir, f), new Uint8Array(1));
      assert.equal(await cudaProviderProblem(dir), undefined);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("cuda: the probe graph is what @svc/onnx/writer writes for Identity(x) -> y", () => {
  const g = new GraphBuilder("cuda_probe");
  const x = g.input("x", "float32", [1]);
  g.op("Identity", [x], {}, "y");
  g.output("y", "float32", [1]);
  const bytes = Uint8Array.from(atob(PROBE_MODEL_BASE64), (c) => c.charCodeAt(0));
  assert.deepEqual(bytes, g.toBytes());
});

Deno.test({
  name: "cuda: the probe session fails here as every model would, with ONNX Runtime's own error",
  ignore: INSTALLED || !LINUX_X64,
  fn: async () => {
    const error = await probeCuda(60_000);
    assert.ok(error !== undefined, "a CUDA session started without the provider");
    assert.match(error, /Failed to load shared library/);
  },
});

Deno.test("cuda: SVC_DEVICE=cuda refuses to start with the problem; auto falls back to the CPU and says why", async () => {
  const fx = await ensureFixtures();
  const problem = `ONNX Runtime's CUDA provider is not installed (…): run ${GPU_SETUP_COMMAND}`;
  const env = {
    SVC_MODELS_DIR: `${fx}/models`,
    SVC_CLUSTER_CACHE: `${fx}/cache`,
    SVC_HUB_DISABLED: "1",
    SVC_MODEL_FILTER: "fixture/dense",
  };
  const lines: string[] = [];
  const log = (level: string, msg: string, fields?: Record<string, unknown>) =>
    lines.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  await assert.rejects(
    createWorker({ ...env, SVC_DEVICE: "cuda" }, {
      log,
      cudaCheck: () => Promise.resolve(problem),
    }),
    (err: Error) =>
      err instanceof StartupError && err.message === `SVC_DEVICE=cuda, but ${problem}`,
  );
  const w = await createWorker({ ...env, SVC_DEVICE: "auto" }, {
    log,
    gpuCount: 1,
    cudaCheck: () => Promise.resolve(problem),
  });
  try {
    assert.equal(w.ctx.registry.deviceName, "cpu");
    const warning = lines.find((l) => l.startsWith("warn SVC_DEVICE=auto"));
    assert.ok(warning?.includes(GPU_SETUP_COMMAND), lines.join("\n"));
  } finally {
    await w.close();
  }
  // A CUDA that works is used (the check is all that stands in for a GPU here).
  const ok = await createWorker({ ...env, SVC_DEVICE: "cuda" }, {
    log,
    cudaCheck: () => Promise.resolve(undefined),
  });
  try {
    assert.equal(ok.ctx.registry.deviceName, "cuda");
  } finally {
    await ok.close();
  }
});

Deno.test("SVC_ATTENTION_BACKEND: the ONNX Runtime switches each value sets", () => {
  const all = [
    "ORT_DISABLE_FLASH_ATTENTION",
    "ORT_DISABLE_MEMORY_EFFICIENT_ATTENTION",
    "ORT_DISABLE_FUSED_ATTENTION",
    "ORT_DISABLE_TRT_FLASH_ATTENTION",
    "ORT_DISABLE_FUSED_CROSS_ATTENTION",
  ];
  // auto: ONNX Runtime's own choice, and the operator's own ORT_* variables left alone.
  assert.deepEqual(attentionEnvironment("auto"), {});
  const off = (keep?: string) => Object.fromEntries(all.map((n) => [n, n === keep ? "0" : "1"]));
  assert.deepEqual(attentionEnvironment("flash"), off("ORT_DISABLE_FLASH_ATTENTION"));
  assert.deepEqual(attentionEnvironment("flash_attention_2"), attentionEnvironment("flash"));
  assert.deepEqual(
    attentionEnvironment("memory_efficient"),
    off("ORT_DISABLE_MEMORY_EFFICIENT_ATTENTION"),
  );
  assert.deepEqual(attentionEnvironment("math"), off());
  // Every value but auto names every switch, so a stray variable cannot contradict it.
  for (const b of ATTENTION_BACKENDS.filter((b) => b !== "auto")) {
    assert.deepEqual(Object.keys(attentionEnvironment(b)).sort(), [...all].sort(), b);
  }
  const set = new Map<string, string>();
  const applied = applyAttentionBackend("math", { set: (k, v) => void set.set(k, v) });
  assert.deepEqual(Object.fromEntries(set), applied);
  assert.equal(set.get("ORT_DISABLE_FLASH_ATTENTION"), "1");
});

Deno.test("SVC_ATTENTION_BACKEND: set for a CUDA worker's sessions, left alone on a CPU one", async () => {
  const fx = await ensureFixtures();
  const env = {
    SVC_MODELS_DIR: `${fx}/models`,
    SVC_CLUSTER_CACHE: `${fx}/cache`,
    SVC_HUB_DISABLED: "1",
    SVC_MODEL_FILTER: "fixture/dense",
    SVC_ATTENTION_BACKEND: "memory_efficient",
  };
  const names = Object.keys(attentionEnvironment("math"));
  const saved = names.map((n) => [n, Deno.env.get(n)] as const);
  const lines: string[] = [];
  const log = (level: string, msg: string, fields?: Record<string, unknown>) =>
    lines.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  try {
    for (const n of names) Deno.env.delete(n);
    const cpu = await createWorker({ ...env, SVC_DEVICE: "cpu" }, { log });
    await cpu.close();
    assert.ok(names.every((n) => Deno.env.get(n) === undefined), "a CPU worker set ORT_*");
    assert.ok(!lines.some((l) => l.includes("attention backend")), lines.join("\n"));
    const gpu = await createWorker({ ...env, SVC_DEVICE: "cuda" }, {
      log,
      cudaCheck: () => Promise.resolve(undefined),
    });
    await gpu.close();
    assert.equal(Deno.env.get("ORT_DISABLE_MEMORY_EFFICIENT_ATTENTION"), "0");
    assert.equal(Deno.env.get("ORT_DISABLE_FLASH_ATTENTION"), "1");
    assert.ok(lines.some((l) => l.startsWith("info attention backend")), lines.join("\n"));
  } finally {
    for (const [n, v] of saved) v === undefined ? Deno.env.delete(n) : Deno.env.set(n, v);
  }
});
