/** The real model backend: every loaded model runs in its own inference thread (Web Worker). */
import type { ModelBackend } from "../registry/runner.ts";
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
  return {
    device: opts.device,
    start: (spec) =>
      InferenceThread.start(
        { ...spec, executionProviders, intraOpThreads: opts.intraOpThreads },
        cell ? { cell, owner: nextOwner++ } : undefined,
      ),
  };
}
