/**
 * The shapes the SIE client libraries (v0.3, TypeScript and Python) type and read in our answers,
 * written down here as field lists: which fields each message must carry and of which JSON type.
 * Extra fields are allowed (clients ignore them); a missing field or a wrong type is an error.
 * Written from the clients' documented types, not copied from them.
 */

/** A JSON type, a union of them, a list, an object with fields, or a string-keyed record. */
export type Shape =
  | "string"
  | "number"
  | "integer"
  | "boolean"
  | "null"
  | "any"
  | Shape[]
  | { list: Shape }
  | { record: Shape }
  | { fields: Record<string, Shape>; optional?: Record<string, Shape> };

/** What is wrong with `value` as `shape` (empty: nothing). */
export function shapeErrors(value: unknown, shape: Shape, path = "$"): string[] {
  if (Array.isArray(shape)) {
    const alt = shape.map((s) => shapeErrors(value, s, path));
    return alt.some((e) => e.length === 0) ? [] : alt.flat();
  }
  if (typeof shape === "string") {
    const ok = shape === "any" ||
      (shape === "null"
        ? value === null
        : shape === "integer"
        ? Number.isInteger(value)
        : typeof value === shape);
    return ok ? [] : [`${path}: expected ${shape}, got ${JSON.stringify(value)?.slice(0, 60)}`];
  }
  if ("list" in shape) {
    if (!Array.isArray(value)) return [`${path}: expected a list`];
    return value.flatMap((v, i) => shapeErrors(v, shape.list, `${path}[${i}]`));
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return [`${path}: expected an object`];
  }
  const obj = value as Record<string, unknown>;
  if ("record" in shape) {
    return Object.entries(obj).flatMap(([k, v]) => shapeErrors(v, shape.record, `${path}.${k}`));
  }
  const errors: string[] = [];
  for (const [k, s] of Object.entries(shape.fields)) {
    if (!(k in obj)) errors.push(`${path}.${k}: missing`);
    else errors.push(...shapeErrors(obj[k], s, `${path}.${k}`));
  }
  for (const [k, s] of Object.entries(shape.optional ?? {})) {
    if (k in obj && obj[k] !== undefined) errors.push(...shapeErrors(obj[k], s, `${path}.${k}`));
  }
  return errors;
}

/** Throw when `value` is not `shape`, listing every difference. */
export function assertShape(value: unknown, shape: Shape, what: string): void {
  const errors = shapeErrors(value, shape);
  if (errors.length > 0) {
    throw new Error(`${what} is not the SIE clients' shape:\n${errors.join("\n")}`);
  }
}

const strings: Shape = { list: "string" };
const states: Shape = "string";

/** `ServerInfo` */
export const SERVER_INFO: Shape = {
  fields: {
    version: "string",
    uptime_seconds: "integer",
    user: "string",
    working_dir: "string",
    pid: "integer",
  },
};

/** `GPUMetrics` */
export const GPU_METRICS: Shape = {
  fields: {
    device: "string",
    name: "string",
    gpu_type: "string",
    utilization_pct: "number",
    memory_used_bytes: "integer",
    memory_total_bytes: "integer",
  },
  optional: { memory_threshold_pct: "number" },
};

/** `ModelConfig` (of a `ModelStatus`) */
export const MODEL_CONFIG: Shape = {
  fields: {
    hf_id: "string",
    adapter: "string",
    inputs: strings,
    outputs: strings,
    dims: { record: ["integer", "null"] },
  },
  optional: {
    max_sequence_length: "integer",
    pooling: ["string", "null"],
    normalize: "boolean",
    adapter_options_loadtime: [{ record: "any" }, "null"],
    adapter_options_runtime: [{ record: "any" }, "null"],
  },
};

/** `ModelStatus` */
export const MODEL_STATUS: Shape = {
  fields: {
    name: "string",
    state: states,
    device: ["string", "null"],
    memory_bytes: "integer",
    config: MODEL_CONFIG,
    queue_depth: "integer",
    queue_pending_items: "integer",
  },
};

/** `WorkerStatusMessage` (a worker's `/ws/status`) */
export const WORKER_STATUS_MESSAGE: Shape = {
  fields: {
    timestamp: "number",
    name: "string",
    gpu: "string",
    gpu_count: "integer",
    bundle: "string",
    machine_profile: "string",
    loaded_models: strings,
    server: SERVER_INFO,
    gpus: { list: GPU_METRICS },
    models: { list: MODEL_STATUS },
    counters: { record: "any" },
    histograms: { record: "any" },
  },
  // The Python client's type adds these.
  optional: { ready: "boolean", pool_name: "string" },
};

/** `ClusterSummary` */
export const CLUSTER_SUMMARY: Shape = {
  fields: {
    worker_count: "integer",
    gpu_count: "integer",
    models_loaded: "integer",
    total_qps: "number",
  },
};

/** `ClusterWorkerInfo` (and the Python client's `WorkerInfo`) */
export const CLUSTER_WORKER_INFO: Shape = {
  fields: {
    url: "string",
    gpu: "string",
    healthy: "boolean",
    queue_depth: "integer",
    loaded_models: strings,
  },
  optional: {
    name: "string",
    gpu_count: "integer",
    memory_used_bytes: "integer",
    memory_total_bytes: "integer",
    bundle: "string",
  },
};

/** `ModelSummary` */
export const MODEL_SUMMARY: Shape = {
  fields: {
    name: "string",
    state: states,
    worker_count: "integer",
    gpu_types: strings,
    total_queue_depth: "integer",
  },
};

/** `ClusterStatusMessage` (the gateway's `/ws/cluster-status`) */
export const CLUSTER_STATUS_MESSAGE: Shape = {
  fields: {
    timestamp: "number",
    cluster: CLUSTER_SUMMARY,
    workers: { list: CLUSTER_WORKER_INFO },
    models: { list: MODEL_SUMMARY },
  },
};

/** The gateway `/health` as `getCapacity()` reads it (and the Python `HealthResponse`). */
export const CAPACITY_HEALTH: Shape = {
  fields: {
    status: "string",
    type: "string",
    cluster: CLUSTER_SUMMARY,
    configured_gpu_types: strings,
    live_gpu_types: strings,
    workers: { list: CLUSTER_WORKER_INFO },
    models: { list: MODEL_SUMMARY },
  },
};

/** A pool as `getPool()` reads it (`PoolInfo`: name, spec, status). */
export const POOL_INFO: Shape = {
  fields: {
    name: "string",
    spec: { fields: {}, optional: { gpus: { record: "integer" } } },
    status: {
      fields: {
        state: "string",
        assigned_workers: {
          list: { fields: { name: "string", url: "string", gpu: "string" } },
        },
      },
      optional: { created_at: "number", last_renewed: "number" },
    },
  },
};

/** One pool of the listing (the Python client's `PoolListItem`, beside `PoolInfo`). */
export const POOL_LIST_ITEM: Shape = {
  fields: {
    name: "string",
    state: "string",
    gpus: { record: "integer" },
    worker_count: "integer",
  },
};

/** `Entity` */
export const ENTITY: Shape = {
  fields: { text: "string", label: "string", score: "number" },
  optional: { start: ["integer", "null"], end: ["integer", "null"], bbox: { list: "number" } },
};

/** `ExtractResult` (the TypeScript client maps every one of the four lists) */
export const EXTRACT_RESULT: Shape = {
  fields: {
    id: "string",
    entities: { list: ENTITY },
    relations: {
      list: { fields: { head: "string", tail: "string", relation: "string", score: "number" } },
    },
    classifications: { list: { fields: { label: "string", score: "number" } } },
    objects: {
      list: { fields: { label: "string", score: "number", bbox: { list: "number" } } },
    },
  },
  optional: { data: { record: "any" } },
};

/** `ScoreResult` (the Python client reads `model` as required) */
export const SCORE_RESULT: Shape = {
  fields: {
    model: "string",
    scores: {
      list: { fields: { item_id: "string", score: "number", rank: "integer" } },
    },
  },
  optional: { query_id: ["string", "null"] },
};
