/** The /ws/status message, sent as JSON about every 200 ms (docs/observability.md). */

import { z } from "zod";
import { Count, FreeObject, type FreeObjectValue } from "./common.ts";
import { type LoraInfo, LoraInfoSchema } from "./models.ts";

/** Model states of the status stream (exactly these four; ModelInfo adds `failed`). */
export const STATUS_MODEL_STATES = ["loaded", "loading", "unloading", "available"] as const;
/** One of {@link STATUS_MODEL_STATES}. */
export type StatusModelState = typeof STATUS_MODEL_STATES[number];

/** Facts about the server process. */
export interface ServerInfo {
  version: string;
  uptime_seconds: number;
  user: string;
  working_dir: string;
  pid: number;
}

/** One GPU. */
export interface GpuStatus {
  index: number;
  /** The device as the SIE clients name it: `cuda:{index}`. */
  device: string;
  name: string;
  /** Normalised GPU type, the same strings as the top-level `gpu`. */
  gpu_type: string;
  utilization_percent: number;
  /** The same reading under the SIE clients' name. */
  utilization_pct: number;
  memory_used_bytes: number;
  memory_total_bytes: number;
  memory_threshold_pct: number;
  temperature_c: number;
}

/**
 * `config` of a model in the status stream: the catalog entry (inner shape not specified) with at
 * least the fields the SIE clients type: `hf_id` (the hub repository, or the model id), `adapter`
 * (the family that runs it; empty when not known yet), `inputs`, `outputs` and `dims`.
 */
export interface StatusModelConfig {
  hf_id: string;
  adapter: string;
  inputs: string[];
  outputs: string[];
  dims: Record<string, number | null>;
  max_sequence_length?: number;
  [key: string]: unknown;
}

/** One model as the status stream reports it. */
export interface ModelStatus {
  name: string;
  state: StatusModelState;
  device: string | null;
  memory_bytes: number;
  queue_depth: number;
  queue_pending_items: number;
  /**
   * The remembered load failure, when there is one (the state then stays `available`: the
   * stream has four states); its message names no file-system path. Absent on the router.
   */
  last_error?: { code: string; message: string } | null;
  /** The model configuration. */
  config: StatusModelConfig;
  /** LoRA adapters loading or loaded on the model. */
  loras?: LoraInfo[];
}

/** One status message. */
export interface StatusMessage {
  /** Unix timestamp in seconds (float). */
  timestamp: number;
  /** Who sends it: the worker's id (the router's id on the router). */
  name: string;
  gpu: string;
  /** GPUs of the machine (of the serving workers, on the router). */
  gpu_count: number;
  /** The bundle served (the serving workers' bundles, comma-separated, on the router). */
  bundle: string;
  /** The machine profile (pool GPU type): `SVC_MACHINE_PROFILE`, else the detected one. */
  machine_profile: string;
  loaded_models: string[];
  server: ServerInfo;
  gpus: GpuStatus[];
  models: ModelStatus[];
  counters: FreeObjectValue;
  histograms: FreeObjectValue;
}

/** Schema of {@link ServerInfo}. */
export const ServerInfoSchema: z.ZodType<ServerInfo, ServerInfo> = z.object({
  version: z.string(),
  uptime_seconds: Count,
  user: z.string(),
  working_dir: z.string(),
  pid: Count,
});

/** Schema of {@link GpuStatus}. */
export const GpuStatusSchema: z.ZodType<GpuStatus, GpuStatus> = z.object({
  index: Count,
  device: z.string(),
  name: z.string(),
  gpu_type: z.string(),
  utilization_percent: z.number(),
  utilization_pct: z.number(),
  memory_used_bytes: Count,
  memory_total_bytes: Count,
  memory_threshold_pct: z.number(),
  temperature_c: z.number().int(),
});

/** Schema of {@link StatusModelConfig}: its named fields checked, the rest kept. */
export const StatusModelConfigSchema: z.ZodType<StatusModelConfig, StatusModelConfig> = z
  .looseObject({
    hf_id: z.string(),
    adapter: z.string(),
    inputs: z.array(z.string()),
    outputs: z.array(z.string()),
    dims: z.record(z.string(), Count.nullable()),
    max_sequence_length: Count.optional(),
  });

/** Schema of {@link ModelStatus}. */
export const ModelStatusSchema: z.ZodType<ModelStatus, ModelStatus> = z.object({
  name: z.string(),
  state: z.enum(STATUS_MODEL_STATES),
  device: z.string().nullable(),
  memory_bytes: Count,
  queue_depth: Count,
  queue_pending_items: Count,
  last_error: z.object({ code: z.string(), message: z.string() }).nullable().optional(),
  config: StatusModelConfigSchema,
  loras: z.array(LoraInfoSchema).optional(),
});

/** Schema of {@link StatusMessage}. */
export const StatusMessageSchema: z.ZodType<StatusMessage, StatusMessage> = z.object({
  timestamp: z.number(),
  name: z.string(),
  gpu: z.string(),
  gpu_count: Count,
  bundle: z.string(),
  machine_profile: z.string(),
  loaded_models: z.array(z.string()),
  server: ServerInfoSchema,
  gpus: z.array(GpuStatusSchema),
  models: z.array(ModelStatusSchema),
  counters: FreeObject,
  histograms: FreeObject,
});
