/**
 * Entry point of an inference thread (a Deno Web Worker). ONNX Runtime's `run` blocks the
 * JavaScript thread for the whole batch, so it must never run on the main thread. A thread runs
 * one model, or one LoRA adapter of a model: it then merges the adapter into a copy of the graph
 * and runs that (its own thread, because building a session blocks the thread that builds it).
 */
import { setRunGate } from "../families/onnx_session.ts";
import { FAMILY_ADAPTERS } from "../families/adapters.ts";
import type { ModelAdapter } from "../families/types.ts";
import { LoraConfigError } from "../lora/lora_config.ts";
import { buildAdaptedModel } from "../lora/build.ts";
import { LoraMismatchError } from "../lora/plan.ts";
import { SafetensorsError } from "../lora/safetensors.ts";
import { ComputeGate } from "./compute_budget.ts";
import { driveBatch, transferables } from "./driver.ts";
import type { FromThread, LoraLoaded, ToThread } from "./protocol.ts";
import type { Int8Verdict } from "../catalog/int8.ts";
import { probeQuantized } from "./int8_probe.ts";

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<ToThread>) => void) | null;
  postMessage(msg: FromThread, transfer?: Transferable[]): void;
};

let adapter: ModelAdapter | undefined;
let runTokenBudget = 0;
/** The model's catalog id, for error messages. */
let modelId = "the model";
// Messages are handled one at a time so that batches never overlap inside one session.
let chain: Promise<void> = Promise.resolve();

scope.onmessage = (e) => {
  // A cost is only tokenising (synchronous): answered at once, even between the runs of a batch,
  // so that a request is refused or admitted without waiting for the batches before it.
  if (e.data.type === "cost") return answerCost(e.data);
  chain = chain.then(() => handle(e.data));
};

/** Answer a `cost` message: the items' tokens as the family's cost model counts them. */
function answerCost(msg: Extract<ToThread, { type: "cost" }>): void {
  let tokens = 0;
  try {
    msg.items.forEach((item, i) => {
      const p = adapter?.prepare(item, i, msg.params);
      if (p && !p.error) tokens += p.cost ?? p.length;
    });
  } catch {
    // Whatever fails here fails again when the batch runs, and is answered there.
  }
  scope.postMessage({ type: "cost", costId: msg.costId, tokens });
}

async function handle(msg: ToThread): Promise<void> {
  switch (msg.type) {
    case "load": {
      try {
        const family = msg.config.family;
        const { type: _, lora, computeGate, int8Probe, ...options } = msg;
        // Every ONNX run of this thread holds the gate by itself (the int8 probe's too).
        setRunGate(
          computeGate ? new ComputeGate(computeGate.cell, computeGate.owner) : undefined,
        );
        let loaded: LoraLoaded | undefined;
        let int8: Int8Verdict | undefined;
        if (lora) {
          const built = buildAdaptedModel({ ...lora, modelPath: options.files.model });
          const { bytes, ...steps } = await built;
          const t0 = performance.now();
          adapter = await FAMILY_ADAPTERS[family]({ ...options, modelBytes: bytes });
          loaded = { ...steps, memoryBytes: bytes.length, sessionMs: performance.now() - t0 };
        } else {
          adapter = await FAMILY_ADAPTERS[family](options);
          if (int8Probe) {
            const floatFiles = { ...options.files, ...int8Probe.floatFiles };
            if (!int8Probe.floatFiles.model_data) delete floatFiles.model_data;
            const probed = await probeQuantized(
              family,
              options.config,
              adapter,
              () => FAMILY_ADAPTERS[family]({ ...options, files: floatFiles }),
              msg.runTokenBudget,
              { model: msg.config.id },
            );
            adapter = probed.adapter;
            int8 = probed.verdict;
          }
        }
        runTokenBudget = msg.runTokenBudget;
        modelId = msg.config.id;
        scope.postMessage({ type: "loaded", lora: loaded, int8 });
      } catch (err) {
        const mismatch = err instanceof LoraMismatchError || err instanceof SafetensorsError ||
          err instanceof LoraConfigError;
        scope.postMessage({ type: "load_failed", message: errorText(err), mismatch });
      }
      return;
    }
    case "run": {
      if (!adapter) {
        scope.postMessage({ type: "run_failed", batchId: msg.batchId, message: "not loaded" });
        return;
      }
      try {
        const r = await driveBatch(
          adapter,
          msg.items,
          msg.params,
          runTokenBudget,
          msg.abandoned,
          { model: modelId, requestOf: msg.requestOf },
        );
        scope.postMessage(
          { type: "result", batchId: msg.batchId, ...r },
          transferables(r.outputs),
        );
      } catch (err) {
        scope.postMessage({ type: "run_failed", batchId: msg.batchId, message: errorText(err) });
      }
      return;
    }
    case "dispose": {
      await adapter?.dispose().catch(() => {});
      adapter = undefined;
      scope.postMessage({ type: "disposed" });
    }
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
