/**
 * Entry point of an inference thread (a Deno Web Worker). ONNX Runtime's `run` blocks the
 * JavaScript thread for the whole batch, so it must never run on the main thread. Besides the
 * model it keeps one session per loaded LoRA adapter (the main thread's store decides which).
 */
import { FAMILY_ADAPTERS } from "../families/adapters.ts";
import { hasAdapter } from "../families/kinds.ts";
import type { AdapterContext, ModelAdapter } from "../families/types.ts";
import { AdapterConfigError } from "../lora/adapter_config.ts";
import { buildAdaptedModel } from "../lora/build.ts";
import { LoraMismatchError } from "../lora/plan.ts";
import { SafetensorsError } from "../lora/safetensors.ts";
import { driveBatch, transferables } from "./driver.ts";
import type { FromThread, LoraLoadSpec, ToThread } from "./protocol.ts";

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<ToThread>) => void) | null;
  postMessage(msg: FromThread, transfer?: Transferable[]): void;
};

let adapter: ModelAdapter | undefined;
let context: AdapterContext | undefined;
/** Sessions of loaded adapters, by adapter id. */
const loras = new Map<string, ModelAdapter>();
let disposed = false;
let runTokenBudget = 0;
// Messages are handled one at a time so that batches never overlap inside one session.
let chain: Promise<void> = Promise.resolve();

scope.onmessage = (e) => {
  const msg = e.data;
  // An adapter builds beside the queue: its merge yields between weights so batches keep running.
  if (msg.type === "lora_load") {
    void loadLora(msg.id, msg.spec);
    return;
  }
  chain = chain.then(() => handle(msg));
};

async function handle(msg: Exclude<ToThread, { type: "lora_load" }>): Promise<void> {
  switch (msg.type) {
    case "load": {
      try {
        const family = msg.config.family;
        if (!hasAdapter(family)) throw new Error(`family '${family}' has no adapter yet`);
        const { type: _, ...options } = msg;
        adapter = await FAMILY_ADAPTERS[family](options);
        context = options;
        runTokenBudget = msg.runTokenBudget;
        scope.postMessage({ type: "loaded" });
      } catch (err) {
        scope.postMessage({ type: "load_failed", message: errorText(err) });
      }
      return;
    }
    case "run": {
      const runner = msg.params.lora === undefined ? adapter : loras.get(msg.params.lora);
      if (!runner) {
        const what = msg.params.lora === undefined ? "model" : `adapter '${msg.params.lora}'`;
        scope.postMessage({
          type: "run_failed",
          batchId: msg.batchId,
          message: `${what} not loaded`,
        });
        return;
      }
      try {
        const r = await driveBatch(
          runner,
          msg.items,
          msg.params,
          runTokenBudget,
          msg.abandoned,
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
    case "lora_unload": {
      const lora = loras.get(msg.id);
      loras.delete(msg.id);
      await lora?.dispose().catch(() => {});
      return;
    }
    case "dispose": {
      disposed = true;
      for (const lora of loras.values()) await lora.dispose().catch(() => {});
      loras.clear();
      await adapter?.dispose().catch(() => {});
      adapter = undefined;
      scope.postMessage({ type: "disposed" });
    }
  }
}

/** Merge the adapter into a copy of the model and open a session on it. */
async function loadLora(id: string, spec: LoraLoadSpec): Promise<void> {
  try {
    if (!context) throw new Error("the model is not loaded");
    const built = await buildAdaptedModel({ ...spec, modelPath: context.files.model });
    const t0 = performance.now();
    const session = await FAMILY_ADAPTERS[context.config.family as keyof typeof FAMILY_ADAPTERS]({
      ...context,
      modelBytes: built.bytes,
    });
    if (disposed) {
      await session.dispose().catch(() => {});
      return;
    }
    await loras.get(id)?.dispose().catch(() => {});
    loras.set(id, session);
    scope.postMessage({
      type: "lora_loaded",
      id,
      memoryBytes: built.bytes.length,
      patched: built.patched,
      planMs: built.planMs,
      mergeMs: built.mergeMs,
      sessionMs: performance.now() - t0,
    });
  } catch (err) {
    const mismatch = err instanceof LoraMismatchError || err instanceof SafetensorsError ||
      err instanceof AdapterConfigError;
    scope.postMessage({ type: "lora_failed", id, message: errorText(err), mismatch });
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
