/**
 * The heavy half of loading an adapter, run inside an inference thread: read the base graph and
 * the adapter's tensors, merge every planned update, and return the patched model's bytes.
 */
import { indexOnnxModel } from "../onnx/model.ts";
import { type LinearTarget, linearTargets } from "./graph_targets.ts";
import { type MergedModel, mergeLoraIntoModel } from "./merge.ts";
import type { LoraPlan } from "./plan.ts";
import { parseSafetensorsHeader, type SafetensorsLimits, tensorFloat32 } from "./safetensors.ts";

/** The linear layers of the model file at `modelPath` (what adapters are planned against). */
export async function graphTargetsOf(modelPath: string): Promise<LinearTarget[]> {
  return linearTargets(indexOnnxModel(await Deno.readFile(modelPath)));
}

/** The model at `modelPath` with the adapter at `adapterPath` merged as `plan` says. */
export async function buildAdaptedModel(
  modelPath: string,
  adapterPath: string,
  plan: LoraPlan,
  limits?: SafetensorsLimits,
): Promise<MergedModel> {
  const [model, adapter] = await Promise.all([
    Deno.readFile(modelPath),
    Deno.readFile(adapterPath),
  ]);
  const header = parseSafetensorsHeader(adapter, adapter.length, limits);
  return mergeLoraIntoModel(model, plan, (name) => {
    const t = header.tensors.get(name);
    if (!t) throw new Error(`adapter_model.safetensors no longer holds tensor '${name}'`);
    return tensorFloat32(adapter, t);
  });
}
