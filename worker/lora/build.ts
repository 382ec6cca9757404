/**
 * The heavy half of loading an adapter, run inside the adapter's inference thread: read the base
 * graph and the adapter's tensors, check the adapter against the graph (fast: no weight is read
 * before every module and shape fits), merge every planned update, and return the patched model.
 */
import { indexOnnxModel } from "@svc/onnx";
import type { LoraConfig } from "./lora_config.ts";
import { linearTargets } from "./graph_targets.ts";
import { mergeLoraIntoModel } from "./merge.ts";
import { planLora } from "./plan.ts";
import { parseSafetensorsHeader, type SafetensorsLimits, tensorFloat32 } from "./safetensors.ts";

/** What the thread is asked to build. */
export interface AdaptedModelSpec {
  /** Local path of the base model's ONNX file. */
  modelPath: string;
  /** Local path of `adapter_model.safetensors`. */
  weightsPath: string;
  /** The adapter's validated `adapter_config.json`. */
  config: LoraConfig;
  /** The base model's catalog id and hub repository (checked against the adapter's base). */
  model: { id: string; repo: string };
  limits?: SafetensorsLimits;
}

/** A built adapted model, with how long its two steps took. */
export interface AdaptedModel {
  bytes: Uint8Array;
  /** Graph weights rewritten. */
  patched: number;
  planMs: number;
  mergeMs: number;
}

/**
 * The model with the adapter merged. Throws `LoraMismatchError` (module and shape named) or
 * `SafetensorsError` when the adapter does not fit, before any weight is merged.
 */
export async function buildAdaptedModel(spec: AdaptedModelSpec): Promise<AdaptedModel> {
  const t0 = performance.now();
  const [model, adapter] = await Promise.all([
    Deno.readFile(spec.modelPath),
    Deno.readFile(spec.weightsPath),
  ]);
  const header = parseSafetensorsHeader(adapter, adapter.length, spec.limits);
  const index = indexOnnxModel(model);
  const plan = planLora({
    config: spec.config,
    tensors: header.tensors,
    targets: linearTargets(index),
    model: spec.model,
  });
  const t1 = performance.now();
  const merged = mergeLoraIntoModel(model, plan, (name) => {
    const t = header.tensors.get(name);
    if (!t) throw new Error(`adapter_model.safetensors no longer holds tensor '${name}'`);
    return tensorFloat32(adapter, t);
  }, index);
  return { ...merged, planMs: t1 - t0, mergeMs: performance.now() - t1 };
}
