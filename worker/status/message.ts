/**
 * The /ws/status message (docs/observability.md), built from plain inputs so it is easy to test.
 * Beyond the specified fields it carries `process` (memory, lag, in-flight, draining) and `images`
 * (the image preprocessing pool): the spec leaves room for them and the worker's dashboard shows
 * `process`; clients ignore unknown keys.
 */
import type { GpuStatus, ModelStatus, StatusMessage } from "@svc/shared/schemas/status";
import type { UnitStatus } from "../registry/registry.ts";
import { type GpuReading, machineProfileOfGpus } from "../telemetry/gpu.ts";
import type { MetricsView } from "@svc/shared/status/metrics_view";
import { type ServerFacts, serverInfo } from "@svc/shared/status/server_facts";
import type { ProcessSnapshot } from "../telemetry/process_metrics.ts";
import type { ImagePoolStatus } from "../images/pool.ts";
import type { PendingEntryFacts } from "@svc/shared/catalog/model_info";
import { statusModelConfig, unconfiguredModelConfig } from "@svc/shared/status/model_config";

/** Extension of the status message: live facts about this worker process. */
export interface ProcessStatus extends ProcessSnapshot {
  in_flight: number;
  draining: boolean;
}

/**
 * One model, plus (extension) whether its weights are here: a model that is `available` but whose
 * files are on no disk of this machine says `weights: "not_cached"` and what would fetch them.
 */
export interface WorkerModelStatus extends ModelStatus {
  weights?: "not_cached";
  weights_reason?: string;
}

/** The message the worker sends: the specified fields plus `process` and `images`. */
export interface WorkerStatusMessage extends StatusMessage {
  models: WorkerModelStatus[];
  /** True while the worker takes new work: preloading done and not draining. */
  ready: boolean;
  /** The fleet pool it serves (`SVC_POOL`, else its machine profile). */
  pool_name: string;
  process: ProcessStatus;
  /**
   * Image pool: threads allowed and started, threads busy, images waiting (`queue_depth`), threads
   * set aside after a decode overran its time (`abandoned`).
   */
  images: ImagePoolStatus;
}

/** Who the worker is, as its settings say (fleet or not). */
export interface WorkerIdentity {
  /** The worker id (`SVC_WORKER_ID` in a fleet), else the host name; may be empty. */
  name: string;
  bundle: string;
  /** `SVC_MACHINE_PROFILE`; undefined: the detected GPU type (`cpu` without one). */
  machineProfile: string | undefined;
  /** `SVC_POOL`; undefined: the machine profile. */
  pool: string | undefined;
}

/** Everything one message is built from, read once per tick. */
export interface StatusInputs {
  nowMs: number;
  server: ServerFacts;
  identity: WorkerIdentity;
  /** Preloading done (`/readyz` answers 200 unless draining). */
  ready: boolean;
  gpus: readonly GpuReading[];
  /** SVC_MEMORY_PRESSURE_THRESHOLD_PERCENT: reported per GPU as `memory_threshold_pct`. */
  memoryThresholdPct: number;
  models: readonly UnitStatus[];
  /** SVC_MODELS entries still being configured from their files, or that could not be. */
  pending?: readonly PendingEntryFacts[];
  metrics: MetricsView;
  process: ProcessStatus;
  images: ImagePoolStatus;
  /** Why a model whose weights are not on this machine can or cannot get them (one line). */
  weightsReason?: string;
}

/** Round to an integer that is never negative (counts, bytes, seconds). */
function count(n: number): number {
  return Number.isFinite(n) && n > 0 ? Math.round(n) : 0;
}

/**
 * One GPU. nvidia-smi answers `[N/A]` for utilisation or temperature on some boards (vGPU,
 * MIG); the message types them as numbers, so an unknown reading is sent as 0.
 */
function gpuStatus(g: GpuReading, thresholdPct: number): GpuStatus {
  return {
    index: count(g.index),
    device: `cuda:${count(g.index)}`,
    name: g.name,
    gpu_type: g.gpu_type,
    utilization_percent: g.utilization_percent ?? 0,
    utilization_pct: g.utilization_percent ?? 0,
    memory_used_bytes: count(g.memory_used_bytes),
    memory_total_bytes: count(g.memory_total_bytes),
    memory_threshold_pct: thresholdPct,
    temperature_c: Math.round(g.temperature_c ?? 0),
  };
}

/**
 * One model. The stream knows four states; a remembered load failure is `available` with its
 * `last_error` (GET /v1/models/{model} shows it as `failed`, and so does the worker's page). `queue_depth` counts items waiting for a batch (the
 * `svc_queue_depth` gauge); `queue_pending_items` adds the items of the batch being run.
 */
function modelStatus(s: UnitStatus, weightsReason: string | undefined): WorkerModelStatus {
  const notCached = s.state === "available" && s.onDisk === false && weightsReason !== undefined;
  return {
    name: s.name,
    state: s.state === "failed" ? "available" : s.state,
    device: s.device,
    memory_bytes: count(s.memoryBytes),
    queue_depth: count(s.queueDepth),
    queue_pending_items: count(s.pendingItems),
    last_error: s.lastError,
    config: statusModelConfig(s.config, { max_item_tokens: s.maxItemTokens }),
    ...(s.loras && s.loras.length > 0 ? { loras: s.loras } : {}),
    ...(notCached ? { weights: "not_cached" as const, weights_reason: weightsReason } : {}),
  };
}

/**
 * A pending SVC_MODELS entry: `loading` while its files are read; once they could not be, like a
 * failed load, `available` with its `last_error`. Its `config` says where it comes from.
 */
function pendingStatus(p: PendingEntryFacts): ModelStatus {
  return {
    name: p.id,
    state: p.state === "loading" ? "loading" : "available",
    device: null,
    memory_bytes: 0,
    queue_depth: 0,
    queue_pending_items: 0,
    last_error: p.lastError,
    config: unconfiguredModelConfig(
      p.id,
      { bundle: p.bundle, source: p.source, configured: false },
      p.source.kind === "hub" ? p.source.repo : p.id,
    ),
  };
}

/** Build one status message. */
export function buildStatusMessage(i: StatusInputs): WorkerStatusMessage {
  const models: WorkerModelStatus[] = [
    ...i.models.map((s) => modelStatus(s, i.weightsReason)),
    ...(i.pending ?? []).map(pendingStatus),
  ];
  const machineProfile = i.identity.machineProfile ?? machineProfileOfGpus(i.gpus);
  return {
    timestamp: i.nowMs / 1000,
    name: i.identity.name,
    // Same convention as the fleet's machine profile: the first GPU's type, else `cpu`.
    gpu: machineProfileOfGpus(i.gpus),
    gpu_count: i.gpus.length,
    bundle: i.identity.bundle,
    machine_profile: machineProfile,
    pool_name: i.identity.pool ?? machineProfile,
    ready: i.ready && !i.process.draining,
    loaded_models: models.filter((m) => m.state === "loaded").map((m) => m.name),
    server: serverInfo(i.server, i.nowMs),
    gpus: i.gpus.map((g) => gpuStatus(g, i.memoryThresholdPct)),
    models,
    counters: i.metrics.counters,
    histograms: i.metrics.histograms,
    process: i.process,
    images: i.images,
  };
}
