/**
 * Messages between the main thread and an inference thread (one thread per loaded model, and one
 * per loaded LoRA adapter of a model).
 */
import type { AdapterContext, ItemOutput, WorkItem, WorkParams } from "../families/types.ts";
import type { AdaptedModelSpec } from "../lora/build.ts";
import type { Int8Verdict } from "../catalog/int8.ts";

/** What an adapter's thread needs besides the model's load options to build its session. */
export type LoraLoadSpec = Omit<AdaptedModelSpec, "modelPath">;

/** An adapter's session is ready: its memory and how long each step took (ms). */
export interface LoraLoaded {
  /** Bytes of the patched model handed to ONNX Runtime (what the adapter adds to the model). */
  memoryBytes: number;
  /** Graph weights rewritten. */
  patched: number;
  planMs: number;
  mergeMs: number;
  sessionMs: number;
}

/** Main → thread. */
export type ToThread =
  /** Load the model; with `lora`, a copy of it with that adapter merged. */
  | ({
    type: "load";
    lora?: LoraLoadSpec;
    /** The worker's compute gate (compute_budget.ts), shared by every CPU inference thread. */
    computeGate?: { cell: Int32Array; owner: number };
    /**
     * `files` hold a quantised graph: probe it against these float files (local paths by role)
     * and keep whichever the probe says (int8_probe.ts).
     */
    int8Probe?: { floatFiles: Record<string, string> };
  } & AdapterContext)
  | {
    type: "run";
    batchId: number;
    items: WorkItem[];
    params: WorkParams;
    /** Per item, 1 once its client went away (shared memory: written while the batch runs). */
    abandoned?: Int32Array;
    /** Per item, its request's number within the batch (see BatchRunner). */
    requestOf?: number[];
  }
  /** What `items` would cost the model (tokens it reads, every run together), nothing run. */
  | { type: "cost"; costId: number; items: WorkItem[]; params: WorkParams }
  | { type: "dispose" };

/** Phase timings of one batch, in milliseconds. */
export interface BatchTiming {
  tokenizationMs: number;
  inferenceMs: number;
  postprocessingMs: number;
}

/** Thread → main. */
export type FromThread =
  | { type: "loaded"; lora?: LoraLoaded; int8?: Int8Verdict }
  /** `mismatch`: the adapter does not fit the model (its files' fault, a 400). */
  | { type: "load_failed"; message: string; mismatch?: boolean }
  | {
    type: "result";
    batchId: number;
    outputs: ItemOutput[];
    timing: BatchTiming;
    /** Padded tokens actually run (batch × longest, summed over sub-batches). */
    paddedTokens: number;
  }
  | { type: "run_failed"; batchId: number; message: string }
  /** The tokens of a `cost` message's items (items the model refuses count nothing). */
  | { type: "cost"; costId: number; tokens: number }
  | { type: "disposed" };
