/** The real model backend: every loaded model runs in its own inference thread (Web Worker). */
import type { ModelBackend, RunnerSpec } from "../registry/runner.ts";
import { InferenceThread } from "./thread_client.ts";

/** Settings every model thread gets. */
export interface ThreadBackendOptions {
  device: "cpu" | "cuda";
  /** Intra-op threads for ONNX Runtime (0 = runtime default). */
  intraOpThreads: number;
}

/** A backend that starts one inference thread per model. */
export function threadBackend(opts: ThreadBackendOptions): ModelBackend {
  // CUDA falls back to CPU for the operators it lacks.
  const executionProviders = opts.device === "cuda" ? ["cuda", "cpu"] : ["cpu"];
  const context = (spec: RunnerSpec) => ({
    ...spec,
    executionProviders,
    intraOpThreads: opts.intraOpThreads,
  });
  return {
    device: opts.device,
    start: (spec) => InferenceThread.start(context(spec)),
    startLora: async (spec, lora) => {
      const { thread, loaded } = await InferenceThread.startLora(context(spec), lora);
      return { runner: thread, loaded };
    },
  };
}
