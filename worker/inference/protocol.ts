/** Messages between the main thread and an inference thread (one thread per loaded model). */
import type { AdapterContext, ItemOutput, WorkItem, WorkParams } from "../families/types.ts";
import type { AdaptedModelSpec } from "../lora/build.ts";

/** What the thread needs to build an adapter's session (the base model file it already has). */
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
  | ({ type: "load" } & AdapterContext)
  | {
    type: "run";
    batchId: number;
    items: WorkItem[];
    params: WorkParams;
    /** Per item, 1 once its client went away (shared memory: written while the batch runs). */
    abandoned?: Int32Array;
  }
  /** Build the session of an adapter (handled beside the batches, not after them). */
  | { type: "lora_load"; id: string; spec: LoraLoadSpec }
  /** Release an adapter's session (after the batches sent before it). */
  | { type: "lora_unload"; id: string }
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
  | ({ type: "lora_loaded"; id: string } & LoraLoaded)
  /** `mismatch`: the adapter does not fit the model (its files' fault, a 400); else internal. */
  | { type: "lora_failed"; id: string; message: string; mismatch: boolean }
  | { type: "disposed" };
