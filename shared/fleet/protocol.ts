/**
 * The worker ↔ router fleet protocol (version 1).
 *
 * Workers dial the router (outbound only, so machines behind NAT can join) with a WebSocket to
 * `FLEET_PATH`, presenting `Authorization: Bearer <worker token>` on the upgrade request. Every
 * frame is one JSON text message with a `type` discriminator:
 *
 *   worker → router: register (first frame), status (~1/s, the models that changed), drain,
 *                    ping (heartbeat), pong
 *   router → worker: registered (answer to register), ack (of drain), ping, pong, error
 *
 * A router answers an incompatible `protocol` with an `error` frame and closes the socket; the
 * release `version` is informative only (a mismatch is logged, not refused). A worker that asks
 * for the connection transport (`transport: "connection"`) and is granted it (`streams` in
 * `registered`) then receives its requests on the same socket as binary frames
 * (shared/fleet/streams/).
 */
import { z } from "zod";
import { MODEL_STATES, type ModelState } from "../schemas/models.ts";
import { ID_PROOF_RE } from "./worker_keys.ts";

/** Version of this message set; bumped on any incompatible change. */
export const FLEET_PROTOCOL_VERSION = 1;

/** Path of the router's WebSocket endpoint that workers dial. */
export const FLEET_PATH = "/fleet/v1/connect";

/** Largest frame either side accepts (bytes of JSON text); bigger frames close the socket. */
export const MAX_FRAME_BYTES = 1024 * 1024;

/** WebSocket close codes used by the fleet link (4000–4999 is the application range). */
export const CLOSE_CODES = {
  normal: 1000,
  goingAway: 1001,
  invalidMessage: 4400,
  unauthorized: 4401,
  protocolMismatch: 4426,
  registrationTimeout: 4408,
  heartbeatTimeout: 4410,
  replaced: 4409,
  /** Another live connection holds the worker id and this one cannot prove it is the same. */
  idInUse: 4403,
  /** More frames per second than the router allows. */
  rateLimited: 4429,
  /** The register frame's id proof does not match its worker id. */
  badIdProof: 4401,
  /** The fleet is at one of the router's aggregate caps (connections, models, status bytes). */
  fleetFull: 4503,
} as const;

/** Error codes carried by `error` frames. */
export const FLEET_ERROR_CODES = [
  "INVALID_MESSAGE",
  "PROTOCOL_MISMATCH",
  "REGISTRATION_TIMEOUT",
  "NOT_REGISTERED",
  "REPLACED",
  "ID_IN_USE",
  "RATE_LIMITED",
  "BAD_ID_PROOF",
  "FLEET_FULL",
] as const;
export type FleetErrorCode = typeof FLEET_ERROR_CODES[number];

// Model states a worker reports are the API's (`failed`: the worker's remembered load failure).
export { MODEL_STATES, type ModelState };

/**
 * Why a worker token is unusable (a phrase following the variable's name, never quoting the
 * token), or undefined when it is fine: at least 16 characters, no whitespace. Router and worker
 * read `SVC_WORKER_TOKEN` through the same setting, so they agree on what starts.
 */
export function workerTokenProblem(token: string): string | undefined {
  return token.length < 16 || /\s/.test(token)
    ? "must be at least 16 characters without whitespace"
    : undefined;
}

/**
 * Why `url` cannot be a worker's advertised base URL (a phrase, never quoting it), or undefined
 * when it is fine: `http(s)://host[:port]` and nothing else. A path, query, fragment or
 * credentials would let a worker (which holds only the fleet token) steer client requests, and
 * the API keys the router adds for workers, somewhere else.
 */
export function advertisedUrlProblem(url: string): string | undefined {
  const problem = "must be http(s)://host[:port] only (no path, query, fragment or credentials)";
  // Checked on the text too: URL parsing forgets an empty `?` or `#`.
  if (!/^https?:\/\/[^/?#@\\\s]+\/?$/i.test(url)) return problem;
  try {
    const u = new URL(url);
    return u.username || u.password || u.pathname !== "/" || u.search || u.hash
      ? problem
      : undefined;
  } catch {
    return problem;
  }
}

/** A worker instance key: 32 to 128 URL-safe characters, random per worker process. */
export const INSTANCE_KEY_RE = /^[A-Za-z0-9_-]{32,128}$/;

/** Worker ids: printable, no spaces, bounded (they become metric labels and KV keys). */
export const WORKER_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/**
 * A loaded model's revision: hex digits of a digest of what its answers depend on (the worker's
 * release, its catalog entry, the content of its files). The router's result cache stores an
 * answer under the revision that produced it and serves it only while a worker announces it.
 */
export const MODEL_REVISION_RE = /^[0-9a-f]{16,64}$/;

/** Machine profiles, pools and bundles: lower-case slugs. */
export const SLUG_RE = /^[a-z0-9][a-z0-9._-]{0,63}$/;

// Member schemas stay private: the public API is the explicit message types and the two union
// schemas below (explicit types keep the package free of slow types).
const Slug = z.string().regex(SLUG_RE, "must be a lower-case slug (a-z, 0-9, '.', '_', '-')");
const Count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const ModelName = z.string().min(1).max(256);

/** One model a worker can serve, as announced at registration. */
export interface FleetModel {
  name: string;
  bundle: string;
  state: ModelState;
  /** The loaded model's revision ({@link MODEL_REVISION_RE}); absent unless loaded. */
  revision?: string;
}

/** One model's live state in a status frame. */
export interface FleetModelStatus {
  name: string;
  state: ModelState;
  queue_depth: number;
  /**
   * Optional (workers of earlier releases leave them out): where the model runs (`cpu`,
   * `cuda`) and the memory it holds, for the router's status stream and model gauges.
   */
  device?: string | null;
  memory_bytes?: number;
  /** Tokens run so far (cumulative): the router's `svc_tokens_processed_total`. */
  tokens_total?: number;
  /** Batch sizes so far (cumulative): the router's `svc_batch_size`. */
  batch_sizes?: FleetHistogram;
  /**
   * The loaded model's revision ({@link MODEL_REVISION_RE}); absent unless loaded (and from
   * workers of earlier releases: the router then caches none of their answers).
   */
  revision?: string;
}

/**
 * A cumulative histogram of a status frame: counts per bound of the series' fixed buckets
 * (`counts[i]`: observations <= bound i), plus the sum and count of observations.
 */
export interface FleetHistogram {
  counts: number[];
  sum: number;
  count: number;
}

/** First frame of a worker: who it is, where to reach it, what it serves. */
export interface RegisterMessage {
  type: "register";
  protocol: number;
  worker_id: string;
  /**
   * Base URL the router may proxy HTTP requests to: `http(s)://host[:port]` only. Optional with
   * the connection transport (a worker behind NAT has none).
   */
  url?: string;
  /** How the worker takes requests: over this connection (default of new workers) or HTTP. */
  transport?: WorkerTransport;
  /** The worker's receive windows for request bodies (connection transport). */
  streams?: StreamOffer;
  machine_profile: string;
  pool: string;
  bundle: string;
  /** Release version of the worker (major.minor.patch). */
  version: string;
  gpus: { count: number; types: string[] };
  models: FleetModel[];
  draining: boolean;
  /**
   * A random secret of this worker process (never shown, stored only hashed). A new connection
   * may replace a live one of the same worker id only by presenting the same key, i.e. when it
   * is the same process reconnecting; without it the id stays with the live connection.
   */
  instance_key?: string;
  /**
   * HMAC of `worker_id` under the fleet's worker secret (`SVC_WORKER_API_KEY`; see
   * shared/fleet/worker_keys.ts). A router holding the secret registers the worker under
   * `worker_id` only with a valid proof; without one it assigns an id of its own.
   */
  id_proof?: string;
}

/** How a worker takes its requests. */
export type WorkerTransport = "connection" | "http";

/** Receive windows of one end of the request streams (bytes in flight unread). */
export interface StreamOffer {
  /** Per stream. */
  window: number;
  /** All streams of the connection together. */
  connection_window: number;
}

/** The router's grant of the connection transport: its windows and the open-stream cap. */
export interface StreamGrant extends StreamOffer {
  max_streams: number;
}

/** Periodic load report (about once a second); also serves as a heartbeat. */
export interface StatusMessage {
  type: "status";
  seq: number;
  /**
   * The models whose status changed since the previous frame on this socket (all of them in
   * the first frame and now and then: shared/fleet/status_delta.ts); a model left out keeps
   * what the router last heard of it.
   */
  models: FleetModelStatus[];
  queue_depth: number;
  in_flight: number;
  memory_used_bytes: number;
  memory_total_bytes: number;
  draining: boolean;
}

/** Sent at the start of a graceful shutdown: route nothing new to this worker. */
export interface DrainMessage {
  type: "drain";
  reason?: string;
}

/**
 * Heartbeat request; the peer answers with a pong carrying the same `t`. The router answers a
 * worker's ping only when it has sent that worker nothing for a third of `stale_after_ms` (the
 * worker needs to hear from it within that bound, not at every beat).
 */
export interface PingMessage {
  type: "ping";
  t: number;
}

/** Heartbeat answer. */
export interface PongMessage {
  type: "pong";
  t: number;
}

/** Every frame a worker may send. */
export type WorkerMessage =
  | RegisterMessage
  | StatusMessage
  | DrainMessage
  | PingMessage
  | PongMessage;

/** The router's answer to a valid register: timings the worker must follow. */
export interface RegisteredMessage {
  type: "registered";
  protocol: number;
  router_version: string;
  router_id: string;
  /** How often the worker sends ping frames. */
  heartbeat_interval_ms: number;
  /** How often the worker sends status frames. */
  status_interval_ms: number;
  /** Silence after which either side treats the peer as gone. */
  stale_after_ms: number;
  /** The id the router registered the worker under (another one than asked: no id proof). */
  worker_id?: string;
  /** Present when requests come over this connection (the worker asked and the router agreed). */
  streams?: StreamGrant;
}

/** Acknowledges a drain frame. */
export interface AckMessage {
  type: "ack";
  of: "drain";
}

/** A refusal or protocol error; the router closes the socket after sending it. */
export interface ErrorMessage {
  type: "error";
  code: FleetErrorCode;
  message: string;
}

/** Every frame a router may send. */
export type RouterMessage =
  | RegisteredMessage
  | AckMessage
  | PingMessage
  | PongMessage
  | ErrorMessage;

const Revision = z.string().regex(MODEL_REVISION_RE, "must be 16 to 64 lower-case hex digits");

const FleetModelSchema = z.object({
  name: ModelName,
  bundle: Slug,
  state: z.enum(MODEL_STATES),
  revision: Revision.optional(),
});

const FleetHistogramSchema = z.object({
  counts: z.array(Count).max(64),
  sum: z.number().nonnegative().max(Number.MAX_SAFE_INTEGER),
  count: Count,
});

const FleetModelStatusSchema = z.object({
  name: ModelName,
  state: z.enum(MODEL_STATES),
  queue_depth: Count,
  device: z.string().regex(SLUG_RE).nullable().optional(),
  memory_bytes: Count.optional(),
  tokens_total: Count.optional(),
  batch_sizes: FleetHistogramSchema.optional(),
  revision: Revision.optional(),
});

const StreamOfferSchema = z.object({
  window: z.number().int().min(64 * 1024).max(16 * 1024 * 1024),
  connection_window: z.number().int().min(64 * 1024).max(1 << 30),
});

const RegisterMessageSchema = z.object({
  type: z.literal("register"),
  protocol: z.number().int().positive(),
  worker_id: z.string().regex(WORKER_ID_RE, "invalid worker id"),
  url: z.string().max(2048).superRefine((u, ctx) => {
    const problem = advertisedUrlProblem(u);
    if (problem) ctx.addIssue({ code: "custom", message: `url ${problem}` });
  }).optional(),
  transport: z.enum(["connection", "http"]).optional(),
  streams: StreamOfferSchema.optional(),
  machine_profile: Slug,
  pool: Slug,
  bundle: Slug,
  version: z.string().min(1).max(64),
  gpus: z.object({ count: Count, types: z.array(Slug).max(64) }),
  models: z.array(FleetModelSchema).max(1000),
  draining: z.boolean().default(false),
  instance_key: z.string().regex(INSTANCE_KEY_RE, "invalid instance key").optional(),
  id_proof: z.string().regex(ID_PROOF_RE, "invalid id proof").optional(),
});

const StatusMessageSchema = z.object({
  type: z.literal("status"),
  seq: Count,
  models: z.array(FleetModelStatusSchema).max(1000),
  queue_depth: Count,
  in_flight: Count,
  memory_used_bytes: Count,
  memory_total_bytes: Count,
  draining: z.boolean(),
});

const DrainMessageSchema = z.object({
  type: z.literal("drain"),
  reason: z.string().max(200).optional(),
});

const PingMessageSchema = z.object({ type: z.literal("ping"), t: z.number() });
const PongMessageSchema = z.object({ type: z.literal("pong"), t: z.number() });

/** Every frame a worker may send (validated shape; `draining` defaults to false). */
export const WorkerMessageSchema: z.ZodType<WorkerMessage, unknown> = z.discriminatedUnion(
  "type",
  [
    RegisterMessageSchema,
    StatusMessageSchema,
    DrainMessageSchema,
    PingMessageSchema,
    PongMessageSchema,
  ],
);

const RegisteredMessageSchema = z.object({
  type: z.literal("registered"),
  protocol: z.number().int().positive(),
  router_version: z.string(),
  router_id: z.string(),
  heartbeat_interval_ms: z.number().int().positive(),
  status_interval_ms: z.number().int().positive(),
  stale_after_ms: z.number().int().positive(),
  worker_id: z.string().regex(WORKER_ID_RE).optional(),
  streams: StreamOfferSchema.extend({ max_streams: z.number().int().min(1).max(65_536) })
    .optional(),
});

const AckMessageSchema = z.object({ type: z.literal("ack"), of: z.literal("drain") });

const ErrorMessageSchema = z.object({
  type: z.literal("error"),
  code: z.enum(FLEET_ERROR_CODES),
  message: z.string().max(500),
});

/** Every frame a router may send. */
export const RouterMessageSchema: z.ZodType<RouterMessage, unknown> = z.discriminatedUnion(
  "type",
  [
    RegisteredMessageSchema,
    AckMessageSchema,
    PingMessageSchema,
    PongMessageSchema,
    ErrorMessageSchema,
  ],
);

/** Result of decoding one frame: the message, or a short reason it was rejected. */
export type Decoded<T> = { ok: true; message: T } | { ok: false; error: string };

/** Decode and validate a frame with the given schema (size, JSON, shape). */
function decodeFrame<T>(schema: z.ZodType<T>, data: unknown): Decoded<T> {
  if (typeof data !== "string") return { ok: false, error: "frames must be JSON text" };
  if (data.length > MAX_FRAME_BYTES) return { ok: false, error: "frame too large" };
  let raw: unknown;
  try {
    raw = JSON.parse(data);
  } catch {
    return { ok: false, error: "frame is not valid JSON" };
  }
  const r = schema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    const where = issue?.path.join(".") || "(root)";
    return { ok: false, error: `invalid frame at ${where}: ${issue?.message ?? "bad shape"}` };
  }
  return { ok: true, message: r.data };
}

/** Decode a frame received by the router from a worker. */
export function decodeWorkerMessage(data: unknown): Decoded<WorkerMessage> {
  return decodeFrame(WorkerMessageSchema, data);
}

/** Decode a frame received by a worker from the router. */
export function decodeRouterMessage(data: unknown): Decoded<RouterMessage> {
  return decodeFrame(RouterMessageSchema, data);
}

/** Serialise a frame (both directions use plain JSON text). */
export function encodeMessage(message: WorkerMessage | RouterMessage): string {
  return JSON.stringify(message);
}
