/** Main-thread handle of one inference thread: load, run batches, dispose. */
import { deadline } from "@svc/shared/deadline";
import type { AdapterContext, WorkItem, WorkParams } from "../families/types.ts";
import { IncompatibleModelError, type ModelRunner } from "../registry/runner.ts";
import { LoraMismatchError } from "../lora/plan.ts";
import type { FromThread, LoraLoaded, LoraLoadSpec, ToThread } from "./protocol.ts";
import { ComputeGate } from "./compute_budget.ts";
import type { Int8Verdict } from "../catalog/int8.ts";

/** Result of one batch as seen by the main thread. */
export type BatchResult = Extract<FromThread, { type: "result" }>;

/** One Web Worker running one model's ONNX session. */
export class InferenceThread implements ModelRunner {
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve(r: BatchResult): void; reject(e: Error): void }>();
  #nextId = 1;
  #onLoaded?: {
    resolve(loaded: { lora?: LoraLoaded; int8?: Int8Verdict }): void;
    reject(e: Error): void;
  };
  #int8?: Int8Verdict;
  #onDisposed?: () => void;
  readonly #costs = new Map<number, (tokens: number) => void>();
  #dead = false;
  /** This thread's share of the compute gate, freed here if the thread dies holding it. */
  #gate?: { cell: Int32Array; owner: number };

  private constructor() {
    this.#worker = new Worker(new URL("./thread_main.ts", import.meta.url).href, {
      type: "module",
    });
    this.#worker.onmessage = (e: MessageEvent<FromThread>) => this.#receive(e.data);
    this.#worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      this.#fail(new Error(`inference thread crashed: ${e.message}`));
    };
  }

  /** The load probe's verdict (a quantised graph checked against its float one). */
  get int8(): Int8Verdict | undefined {
    return this.#int8;
  }

  /** Start a thread and load the model in it; its runs take turns on `computeGate` when given. */
  static async start(
    opts: AdapterContext & { int8Probe?: { floatFiles: Record<string, string> } },
    computeGate?: { cell: Int32Array; owner: number },
  ): Promise<InferenceThread> {
    return (await InferenceThread.#start(opts, computeGate)).thread;
  }

  /**
   * Start a thread running the model with a LoRA adapter merged. Rejects with a
   * `LoraMismatchError` when the adapter does not fit the model.
   */
  static async startLora(
    opts: AdapterContext,
    lora: LoraLoadSpec,
    computeGate?: { cell: Int32Array; owner: number },
  ): Promise<{ thread: InferenceThread; loaded: LoraLoaded }> {
    const { thread, loaded } = await InferenceThread.#start(opts, computeGate, lora);
    return { thread, loaded: loaded! };
  }

  static async #start(
    opts: AdapterContext & { int8Probe?: { floatFiles: Record<string, string> } },
    computeGate?: { cell: Int32Array; owner: number },
    lora?: LoraLoadSpec,
  ): Promise<{ thread: InferenceThread; loaded?: LoraLoaded }> {
    const t = new InferenceThread();
    t.#gate = computeGate;
    const loaded = new Promise<{ lora?: LoraLoaded; int8?: Int8Verdict }>((resolve, reject) =>
      t.#onLoaded = { resolve, reject }
    );
    t.#post({ type: "load", ...opts, lora, computeGate });
    try {
      const done = await loaded;
      t.#int8 = done.int8;
      return { thread: t, loaded: done.lora };
    } catch (err) {
      t.#worker.terminate();
      t.#freeGate();
      throw err;
    }
  }

  /**
   * What `items` would cost the model: the tokens it reads for them, every run together, as the
   * family counts them (nothing runs). 0 once the thread is gone.
   */
  cost(items: WorkItem[], params: WorkParams): Promise<number> {
    if (this.#dead) return Promise.resolve(0);
    const costId = this.#nextId++;
    return new Promise((resolve) => {
      this.#costs.set(costId, resolve);
      this.#post({ type: "cost", costId, items, params });
    });
  }

  /** Run one batch; resolves with outputs in item order (undefined for abandoned items). */
  run(
    items: WorkItem[],
    params: WorkParams,
    abandoned?: Int32Array,
    requestOf?: number[],
  ): Promise<BatchResult> {
    if (this.#dead) return Promise.reject(new Error("inference thread is gone"));
    const batchId = this.#nextId++;
    return new Promise<BatchResult>((resolve, reject) => {
      this.#pending.set(batchId, { resolve, reject });
      // Image tensors move to the thread; the main thread never reads them again.
      const pixels = items.flatMap((it) => it.pixels?.map((p) => p.data.buffer) ?? []);
      this.#worker.postMessage(
        { type: "run", batchId, items, params, abandoned, requestOf } satisfies ToThread,
        pixels,
      );
    });
  }

  /** Release the session and stop the thread (bounded: terminates after `timeoutMs`). */
  async dispose(timeoutMs = 5000): Promise<void> {
    if (this.#dead) return;
    const done = new Promise<void>((resolve) => this.#onDisposed = resolve);
    this.#post({ type: "dispose" });
    await deadline(done, timeoutMs);
    this.#dead = true;
    this.#worker.terminate();
    this.#fail(new Error("model unloaded"));
  }

  #post(msg: ToThread): void {
    this.#worker.postMessage(msg);
  }

  #receive(msg: FromThread): void {
    switch (msg.type) {
      case "loaded":
        this.#onLoaded?.resolve({ lora: msg.lora, int8: msg.int8 });
        return;
      case "load_failed":
        // The thread reports what the family refused (graph, tokenizer, config) or an adapter
        // that does not fit: the files' fault. A thread that crashes instead fails through #fail
        // with a plain Error.
        this.#onLoaded?.reject(
          msg.mismatch
            ? new LoraMismatchError(msg.message)
            : new IncompatibleModelError(msg.message),
        );
        return;
      case "cost":
        this.#costs.get(msg.costId)?.(msg.tokens);
        this.#costs.delete(msg.costId);
        return;
      case "result":
      case "run_failed": {
        const p = this.#pending.get(msg.batchId);
        this.#pending.delete(msg.batchId);
        if (msg.type === "result") p?.resolve(msg);
        else p?.reject(new Error(msg.message));
        return;
      }
      case "disposed":
        this.#onDisposed?.();
    }
  }

  #freeGate(): void {
    if (this.#gate) ComputeGate.releaseFor(this.#gate.cell, this.#gate.owner);
  }

  #fail(err: Error): void {
    this.#dead = true;
    // A thread that crashed or was terminated mid-run must not keep the cores from the others.
    this.#freeGate();
    this.#onLoaded?.reject(err);
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
    // Costs asked of a dead thread count nothing: the run that follows fails anyway.
    for (const c of this.#costs.values()) c(0);
    this.#costs.clear();
  }
}
