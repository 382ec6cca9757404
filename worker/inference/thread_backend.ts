/** The real model backend: every loaded model runs in its own inference thread (Web Worker). */
import type { ModelBackend } from "../registry/runner.ts";
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
  return {
    device: opts.device,
    start: (spec) =>
      InferenceThread.start({
        ...spec,
        executionProviders,
        intraOpThreads: opts.intraOpThreads,
      }),
  };
}
