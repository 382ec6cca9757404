/**
 * How the registry runs a model, injected like text-embeddings-inference's `Backend`: the real
 * backend starts one inference thread per model (`inference/thread_backend.ts`); tests hand in a
 * fake one to check loading, eviction and failure memory without ONNX Runtime.
 */
import type { AdapterContext, WorkItem, WorkParams } from "../families/types.ts";
import type { BatchRunner } from "../scheduler/batcher.ts";
import type { LoraLoaded, LoraLoadSpec } from "../inference/protocol.ts";
import type { Int8Verdict } from "../catalog/int8.ts";

/**
 * What a model runner is started from: the model load options without the device settings,
 * which the backend adds (files are the weights store's local paths, by role).
 */
export type RunnerSpec = Omit<AdapterContext, "executionProviders" | "intraOpThreads"> & {
  /**
   * `files` hold a quantised graph: the runner probes it against these float files (local paths
   * by role) at load and runs whichever the probe says.
   */
  int8Probe?: { floatFiles: Record<string, string> };
};

/** One started model: runs batches until disposed. */
export interface ModelRunner {
  /** Run one batch; outputs come back in item order. */
  run: BatchRunner;
  /**
   * What `items` would cost the model in tokens it reads, every run together (families with a
   * cost model count their windows and prompts); absent: the runner cannot say.
   */
  cost?(items: WorkItem[], params: WorkParams): Promise<number>;
  /** Release the model, waiting at most `timeoutMs`; runs still pending then fail. */
  dispose(timeoutMs?: number): Promise<void>;
  /** The load probe's verdict, when the spec asked for one. */
  readonly int8?: Int8Verdict;
}

/**
 * The model's files cannot run as its catalog entry says (graph, tokenizer or configuration do
 * not fit the family). Trying again with the same files gives the same answer.
 */
export class IncompatibleModelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "IncompatibleModelError";
  }
}

/** Starts model runners on one device. */
export interface ModelBackend {
  /** Where runners run: run budgets and model status depend on it. */
  readonly device: "cpu" | "cuda";
  /**
   * Load one model and start its runner. Rejects with an {@link IncompatibleModelError} when the
   * files do not fit the model, with any other error for causes that may pass (a crashed thread).
   */
  start(spec: RunnerSpec): Promise<ModelRunner>;
  /**
   * Start a runner of the model with a LoRA adapter merged (its own thread, so that building its
   * session never holds up the model's batches). Rejects with a `LoraMismatchError` when the
   * adapter does not fit. Backends without it serve no adapters.
   */
  startLora?(spec: RunnerSpec, lora: LoraLoadSpec): Promise<StartedLora>;
}

/** A started adapter runner, with what its load cost. */
export interface StartedLora {
  runner: ModelRunner;
  loaded: LoraLoaded;
}
