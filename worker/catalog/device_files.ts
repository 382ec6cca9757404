/**
 * Per-device weight files: a catalog entry's `device_files` (e.g. the int8 graph a hub repository
 * publishes for CPUs) replace its `files` on that device, unless SVC_FORCE_FP32 keeps them. A
 * quantised graph on CPU comes with its plan (int8.ts): checked against the float files at load,
 * or not used at all by families the probe cannot check.
 */
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { int8PlanFor } from "./int8.ts";

/** The entry as it runs on `device`: `files` with that device's overrides applied. */
export function configForDevice(
  config: ModelConfig,
  device: "cpu" | "cuda",
  forceFp32: boolean,
): ModelConfig {
  const over = forceFp32 ? undefined : config.device_files?.[device];
  if (!over || Object.keys(over).length === 0) return config;
  const int8 = device === "cpu" ? int8PlanFor(config, over) : undefined;
  if (int8?.skipped) return { ...config, int8 };
  const files = { ...config.files, ...over };
  // External weights belong to the graph they came with; a replaced graph without its own
  // `model_data` (quantised exports are single files) must not fetch the old one.
  if (over.model !== undefined && over.model !== config.files.model && !over.model_data) {
    delete files.model_data;
  }
  return { ...config, files, ...(int8 ? { int8 } : {}) };
}

/** Every entry of a catalog as it runs on `device`. */
export function catalogForDevice(
  catalog: Map<string, ModelConfig>,
  device: "cpu" | "cuda",
  forceFp32: boolean,
): Map<string, ModelConfig> {
  return new Map([...catalog].map(([id, c]) => [id, configForDevice(c, device, forceFp32)]));
}
