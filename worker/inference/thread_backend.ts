/** The real model backend: every loaded model runs in its own inference thread (Web Worker). */
import type { ModelBackend, RunnerSpec } from "../registry/runner.ts";
import { ComputeGate } from "./compute_budget.ts";
import { InferenceThread } from "./thread_client.ts";

/** Settings every model thread gets. */
export interface ThreadBackendOptions {
  device: "cpu" | "cuda";
  /** Intra-op threads for ONNX Runtime: the worker's compute budget (compute_budget.ts). */
  intraOpThreads: number;
}

/**
 * A backend that starts one inference thread per model. On CPU every session gets the whole
 * budget and the threads share one compute gate, so two busy models take turns on the cores
 * rather than running 2 × budget threads at once.
 */
export function threadBackend(opts: ThreadBackendOptions): ModelBackend {
  // CUDA falls back to CPU for the operators it lacks.
  const executionProviders = opts.device === "cuda" ? ["cuda", "cpu"] : ["cpu"];
  const cell = opts.device === "cpu" ? new ComputeGate().cell : undefined;
  // Each thread holds the gate under its own id, so a dead thread's hold can be undone.
  let nextOwner = 1;
  const gateShare = () => cell ? { cell, owner: nextOwner++ } : undefined;
  const context = (spec: RunnerSpec) => ({
    ...spec,
    executionProviders,
    intraOpThreads: opts.intraOpThreads,
  });
  return {
    device: opts.device,
    start: (spec) => InferenceThread.start(context(spec), gateShare()),
    startLora: async (spec, lora) => {
      const { thread, loaded } = await InferenceThread.startLora(context(spec), lora, gateShare());
      return { runner: thread, loaded };
    },
  };
}
