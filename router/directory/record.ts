/**
 * Worker records as read back from shared storage (Deno KV): validated before use, since another
 * isolate, an older release or a hand edit may have written them. A record that does not parse
 * is left out of routing instead of crashing the router.
 */
import { z } from "zod";
import { MODEL_REVISION_RE, MODEL_STATES, SLUG_RE, WORKER_ID_RE } from "@svc/shared/fleet/protocol";
import type { WorkerModel, WorkerRecord } from "./types.ts";

const Slug = z.string().regex(SLUG_RE);
const Count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const Id = z.string().min(1).max(128);

/** One model on one worker (the fleet protocol's bounds). */
const WorkerModelSchema: z.ZodType<WorkerModel> = z.object({
  name: z.string().min(1).max(256),
  bundle: Slug,
  state: z.enum(MODEL_STATES),
  queue_depth: Count,
  revision: z.string().regex(MODEL_REVISION_RE).optional(),
});

/** The record's fields as an object schema (heads below reuse all but the models). */
const RecordObject = z.object({
  id: z.string().regex(WORKER_ID_RE),
  conn_id: Id,
  router_id: Id,
  // Empty: the worker takes its requests over its connection only (no advertised URL).
  url: z.string().max(2048).refine((u) => u === "" || URL.canParse(u), "url must be a URL"),
  transport: z.enum(["connection", "http"]).optional(),
  machine_profile: Slug,
  pool: Slug,
  bundle: Slug,
  version: z.string().min(1).max(64),
  gpu_count: Count,
  gpu_types: z.array(z.string().max(64)).max(64),
  models: z.array(WorkerModelSchema).max(1000),
  queue_depth: Count,
  in_flight: Count,
  memory_used_bytes: Count,
  memory_total_bytes: Count,
  draining: z.boolean(),
  instance_hash: z.string().regex(/^[0-9a-f]{64}$/).optional(),
  registered_at: Count,
  last_seen: Count,
});

/** Schema of a stored {@link WorkerRecord}, with the bounds the fleet hub applies on the wire. */
export const WorkerRecordSchema: z.ZodType<WorkerRecord> = RecordObject;

/**
 * A worker's head in KV: its record without the model list (stored apart in chunks, so that the
 * announced-models cap fits KV's 64 KiB values), which chunks hold the list, and how long the
 * record counts as live (a deadline in the value: KV's `expireIn` only deletes at the earliest).
 */
export interface StoredHead extends Omit<WorkerRecord, "models"> {
  /** Generation of the model list: chunks live under `[prefix, "models", id, models_gen, i]`. */
  models_gen: string;
  models_chunks: number;
  models_count: number;
  /** Epoch ms until which the head is live without a renewal by its holder. */
  alive_until: number;
  /** The directory (router instance) that wrote it: its own heartbeat key must be live too. */
  holder: string;
}

const StoredHeadSchema: z.ZodType<StoredHead> = RecordObject.omit({ models: true }).extend({
  models_gen: z.string().min(1).max(64),
  models_chunks: z.number().int().min(0).max(1000),
  models_count: z.number().int().min(0).max(1000),
  alive_until: Count,
  holder: Id,
});

/** One stored chunk of a model list. */
const ChunkSchema = z.array(WorkerModelSchema).max(1000);

/** The head in `value`, or undefined when it is not a valid stored head. */
export function parseStoredHead(value: unknown): StoredHead | undefined {
  const r = StoredHeadSchema.safeParse(value);
  return r.success ? r.data : undefined;
}

/** The models of a stored chunk, or undefined when it is not one. */
export function parseModelChunk(value: unknown): WorkerModel[] | undefined {
  const r = ChunkSchema.safeParse(value);
  return r.success ? r.data : undefined;
}

/** The record in `value`, or undefined when it is not a valid worker record. */
export function parseWorkerRecord(value: unknown): WorkerRecord | undefined {
  const r = WorkerRecordSchema.safeParse(value);
  return r.success ? r.data : undefined;
}
