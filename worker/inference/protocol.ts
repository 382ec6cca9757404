/** Messages between the main thread and an inference thread (one thread per loaded model). */
import type { AdapterContext, ItemOutput, WorkItem, WorkParams } from "../families/types.ts";

/** Main → thread. */
export type ToThread =
  | ({
    type: "load";
    /** The worker's compute gate (compute_budget.ts), shared by every CPU inference thread. */
    computeGate?: { cell: Int32Array; owner: number };
  } & AdapterContext)
  | {
    type: "run";
    batchId: number;
    items: WorkItem[];
    params: WorkParams;
    /** Per item, 1 once its client went away (shared memory: written while the batch runs). */
    abandoned?: Int32Array;
  }
  | { type: "dispose" };

/** Phase timings of one batch, in milliseconds. */
export interface BatchTiming {
  tokenizationMs: number;
  inferenceMs: number;
  postprocessingMs: number;
}

/** Thread → main. */
export type FromThread =
  | { type: "loaded" }
  | { type: "load_failed"; message: string }
  | {
    type: "result";
    batchId: number;
    outputs: ItemOutput[];
    timing: BatchTiming;
    /** Padded tokens actually run (batch × longest, summed over sub-batches). */
    paddedTokens: number;
  }
  | { type: "run_failed"; batchId: number; message: string }
  | { type: "disposed" };
