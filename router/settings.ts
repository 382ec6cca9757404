/**
 * The router's settings: every variable it reads, in one schema of shared field helpers, parsed
 * once at start-up (`loadRouterSettings`) into typed slices. Nothing else in the router reads the
 * environment.
 */
import type { ReplaySettings } from "./proxy/replay.ts";
import type { InputLimits } from "@svc/shared/codec/limits";
import type { BrowserPolicy } from "@svc/shared/http/browser_guard";
import {
  bool,
  browserPolicyOf,
  checkCommon,
  COMMON_FIELDS,
  ConfigError,
  type Env,
  type HttpSettings,
  httpSettingsOf,
  int,
  limitsOf,
  list,
  type LogSettings,
  logSettingsOf,
  millis,
  oneOf,
  type ReferenceSection,
  ROUTER_INFLIGHT_BODY_BYTES,
  type SchemaValues,
  secret,
  settingsSchema,
  type SliceMap,
  type SliceOf,
  sliceOf,
  slug,
  slugList,
  str,
  unknownSettingsWarning,
  url,
} from "@svc/shared/config";
import { SLUG_RE } from "@svc/shared/fleet/protocol";
import { DEFAULT_LEARNED, type LearnedLimits } from "./directory/types.ts";
import { cidrProblem, type Network, parseCidr } from "./fleet/networks.ts";
import { parseExtraModels } from "./pools/extra_models.ts";
import type { FleetCaps } from "./fleet/budget.ts";
import type { ViewLimits } from "./views/bounds.ts";
import type { ServerKind } from "./http_server.ts";

/** Router-only settings. */
/**
 * The fleet caps per worker of `SVC_FLEET_WORKERS`: twice the sockets (reconnects overlap), a
 * hundred models (30 is typical), 6 KiB of frames a second (a worker at rest sends a few hundred
 * bytes, a registration or full status frame of 30 models a few KB: the room is for a fleet
 * registering at once after a router restart). Every byte of budget is also what a flood of rogue
 * sockets may make the router parse: at 16 KiB a 30-socket flood took it to 351 MiB, at 8 KiB
 * to 295-324 MiB, at 6 KiB to 281-301 MiB, at 4 KiB to 234 MiB, alone on the machine; the
 * e2e tier beside it adds about 80 (tests/e2e/hardening/fleet_trust.test.ts, bound 400 MiB).
 */
export const FLEET_SIZED = { connections: 2, models: 100, bytesPerS: 6 * 1024 } as const;

const ROUTER_FIELDS = {
  SVC_API_KEYS: list({
    secret: true,
    item: (k) => k.length < 8 || /\s/.test(k) ? "entries must be at least 8 characters" : undefined,
    doc: "comma-separated client keys; when set, the API (`/v1/*`), `/health` (its summary) and " +
      "`/ws/status` need `Authorization: Bearer <key>`; `/healthz`, `/readyz` and the dashboard " +
      "page stay open. A client key is not an admin key (`SVC_ADMIN_KEYS`). Set but blank " +
      "refuses to start",
  }),
  SVC_ADMIN_KEYS: list({
    secret: true,
    item: (k) =>
      k.length < 16 || /\s/.test(k) ? "entries must be at least 16 characters" : undefined,
    doc: "comma-separated admin keys (`Authorization: Bearer <key>`): operator actions " +
      "(`/v1/admin/*`, `deno task drain`) and fleet detail (`/health` in full with worker ids " +
      "and URLs, `/metrics`, `/ws/cluster-status`, the dashboard's data). A client key gets " +
      "403 there. Unset: only a router listening on loopback grants them, to clients on the " +
      "same machine. An admin key also works as a client key. Set but blank refuses to start",
  }),
  SVC_STATUS_PUBLIC: bool({
    default: false,
    doc: "show fleet detail (`/health` in full, `/metrics`, `/ws/cluster-status`, `/ws/status`: " +
      "worker ids, URLs and models) to everyone, without keys; admin actions still need an " +
      "admin key. Only for a router whose port is reachable from a private network alone",
  }),
  SVC_EXPOSE_WORKER_ID: bool({
    default: false,
    doc: "send clients `X-SVC-Worker-ID` (which worker answered) on proxied answers: for " +
      "debugging; worker ids are fleet detail, otherwise shown to admin keys only",
  }),
  SVC_DEFAULT_MACHINE_PROFILE: slug({
    default: undefined,
    doc: "pool for requests without `X-SVC-MACHINE-PROFILE`; unset makes the header required " +
      "(400)",
  }),
  SVC_READYZ_REQUIRE_WORKER: bool({
    default: false,
    doc: "`1`: `/readyz` is 503 until a worker serves the default pool (without one: any pool). " +
      "Off, it is 200 with no worker, as SIE tooling expects of a router whose pools scale to " +
      "zero. `deno task start` sets it",
  }),
  SVC_MACHINE_PROFILES: slugList({
    doc: "profiles clients may name besides the pools of registered workers and the default: " +
      "list every pool that scales to zero (any other profile is a 400)",
  }),
  SVC_WORKER_STALE_MS: millis({
    min: 200,
    max: 600_000,
    default: 3000,
    doc: "a worker silent this long is removed (a dropped socket removes it at once)",
  }),
  SVC_HEARTBEAT_INTERVAL_MS: millis({
    min: 50,
    max: 60_000,
    default: 500,
    doc: "worker ping interval (sent to workers at registration)",
  }),
  SVC_STATUS_INTERVAL_MS: millis({
    min: 50,
    max: 60_000,
    default: 1000,
    doc: "worker status interval (sent to workers at registration)",
  }),
  SVC_WORKER_MAX_MODELS: int({
    min: 1,
    max: 1000, // a frame names at most 1000, and stored records are checked against it
    default: 1000,
    doc: "most models one worker may announce (registration and status); further ones are " +
      "ignored",
  }),
  SVC_WORKER_MAX_FRAMES_PER_S: int({
    min: 1,
    max: 10_000,
    default: 50,
    doc: "most fleet frames one worker socket may send per second; beyond it the socket is " +
      "closed (4429)",
  }),
  SVC_WORKER_MAX_STREAMS: int({
    min: 1,
    max: 65_536,
    default: 1024,
    doc: "requests open at once over one worker's connection (connection transport); a request " +
      "past it goes to another worker, or gets `502`",
  }),
  SVC_WORKER_STREAM_WINDOW_BYTES: int({
    min: 64 * 1024,
    max: 16 * 1024 * 1024,
    default: 256 * 1024,
    shown: "`262144` (256 KiB)",
    doc: "answer bytes one request stream of a worker's connection may have in flight unread " +
      "(its credit): a slow client holds at most this much of a worker's answer here",
  }),
  SVC_WORKER_CONNECTION_WINDOW_BYTES: int({
    min: 256 * 1024,
    max: 1 << 30,
    default: 8 * 1024 * 1024,
    shown: "`8388608` (8 MiB)",
    doc: "answer bytes all request streams of one worker's connection together may have in " +
      "flight unread; a worker that sends past its credit, breaks the framing or answers a " +
      "stream never opened is closed (only its own requests fail, with `502`)",
  }),
  SVC_FLEET_WORKERS: int({
    min: 1,
    max: 100_000,
    default: 1000,
    doc: "the fleet size the router is sized for: the three fleet caps below default to " +
      "multiples of it, so one number admits a fleet (at 1000: 2000 sockets, 100,000 models, " +
      "6,000 KiB of frames a second)",
  }),
  SVC_FLEET_MAX_CONNECTIONS: int({
    min: 1,
    max: 200_000,
    default: undefined,
    shown: `${FLEET_SIZED.connections} × \`SVC_FLEET_WORKERS\``,
    doc: "fleet sockets the router holds at once, registered or not; beyond it new worker " +
      "connections get `503` (each worker holds one; twice the fleet leaves room for sockets " +
      "that overlap while workers reconnect)",
  }),
  SVC_FLEET_MAX_MODELS: int({
    min: 1,
    max: 10_000_000,
    default: undefined,
    shown: `${FLEET_SIZED.models} × \`SVC_FLEET_WORKERS\` (at least \`SVC_WORKER_MAX_MODELS\`)`,
    doc: "models all registered workers together may announce; a registration past it is " +
      "refused, and status frames past it close the workers announcing the most first",
  }),
  SVC_FLEET_MAX_STATUS_BYTES_PER_S: int({
    min: 64 * 1024,
    max: 1 << 30,
    default: undefined,
    shown: `${FLEET_SIZED.bytesPerS / 1024} KiB × \`SVC_FLEET_WORKERS\` (at least 64 KiB)`,
    doc: "bytes of fleet frames (status, registrations, heartbeats) per second, all sockets " +
      "together; past it the sockets that sent the most this second are closed first, and new " +
      "fleet sockets get `503` until the second is over (a worker at rest sends a few hundred " +
      "bytes a second, a full status frame of 30 models a few KB, a registration about as much)",
  }),
  SVC_FLEET_VIEW_MAX_WORKERS: int({
    min: 1,
    max: 100_000,
    default: 500,
    doc: "workers listed in `/health`, `/ws/cluster-status` (the dashboard) and per model on " +
      "`/ws/status`; the counts stay whole and `truncated` says what was left out",
  }),
  SVC_FLEET_VIEW_MAX_MODELS: int({
    min: 1,
    max: 1_000_000,
    default: 1000,
    doc: "model entries in those views: the fleet's model list, and all workers' model lists " +
      "together (so a fleet view stays about a megabyte at most)",
  }),
  SVC_WORKER_ALLOWED_NETWORKS: list({
    item: cidrProblem,
    doc: "comma-separated CIDR blocks; when set, workers must advertise an IP address inside " +
      "one of them (host names are refused). Unset: loopback and private addresses are " +
      "refused unless the router listens on loopback, public ones accepted (host names are " +
      "resolved at registration). Link-local and cloud metadata addresses are always refused",
  }),
  SVC_MAX_LEARNED_MODELS: int({
    min: 1,
    max: 1_000_000,
    default: 10_000,
    doc: "most model → bundle pairs remembered from what workers reported (earliest learned " +
      "forgotten first; each also after 7 days without a report)",
  }),
  SVC_EXTRA_MODELS: str({
    default: undefined,
    doc: "model → bundle pairs of models only workers know (their `SVC_MODELS_DIR`), as " +
      "`org/a=default,org/b=extract` or a JSON object: a pool scaled to zero answers 202 for " +
      "them from the first request (a model nobody names goes to bundle `default`)",
  }),
  SVC_UPSTREAM_TIMEOUT_MS: millis({
    min: 100,
    max: 3_600_000,
    default: 150_000,
    doc: "bound on one proxied request (504 beyond it)",
  }),
  SVC_REPLAY_MAX_BODY_BYTES: int({
    min: 0,
    max: 1 << 30,
    default: 32_768,
    doc:
      "a request of at most this many body bytes that a dying worker dropped is sent once more " +
      "to another worker, unless its body was at a worker's death before (then `502 " +
      "WORKER_LOST`, never replayed); larger ones, the kind that kill workers, are never replayed. " +
      "`0`: none is",
  }),
  SVC_RETRY_BUDGET_PERCENT: int({
    min: 0,
    max: 100,
    default: 20,
    doc: "replays of dropped requests (`SVC_REPLAY_MAX_BODY_BYTES`) in 10 s are at most this " +
      "percentage of the requests forwarded over the last 10 to 20 s, plus `SVC_RETRY_BUDGET_MIN`",
  }),
  SVC_RETRY_BUDGET_MIN: int({
    min: 0,
    max: 1_000_000,
    default: 10,
    doc: "replays of dropped requests allowed in 10 s whatever the traffic",
  }),
  SVC_REPLAY_REMEMBER_BODIES: int({
    min: 1,
    max: 10_000_000,
    default: 4096,
    doc: "digests of bodies dropped by dying workers the router remembers (a body dropped twice " +
      "is never replayed); the least recently dropped are forgotten first",
  }),
  SVC_STARTUP_HOLD_MS: millis({
    min: 0,
    max: 600_000,
    default: 5000,
    doc: "for this long after the router starts, a model request whose pool has no serving " +
      "worker waits for one (after a restart, workers reconnect within 0.4-3 s by their " +
      "backoff), or for its pool to become known, " +
      "instead of a `202`; a `202` given meanwhile says `Retry-After: 1`",
  }),
  SVC_RECONNECT_HOLD_MS: millis({
    min: 0,
    max: 60_000,
    default: 2500,
    doc: "how long a model request waits when its pool's live workers take requests only over " +
      "connections other router instances hold (connection transport, no advertised URL: a " +
      "worker whose router died dials another within about 2 s); after it a retryable `503`, " +
      "never a `202` while such a worker is alive",
  }),
  SVC_RELAY_MAX_BODY_BYTES: int({
    min: 0,
    max: 64 * 1024 * 1024,
    default: 8 * 1024 * 1024,
    shown: "`8388608` (8 MiB)",
    doc: "in KV mode, a request for a worker whose connection only another router instance " +
      "holds (connection transport, no advertised URL: a Deno Deploy isolate it did not dial) " +
      "is relayed to that instance through KV, request and answer bodies of at most this many " +
      "bytes each; a larger request gets `503 NO_CAPACITY` naming this setting, a larger " +
      "answer `502`. `0`: no relay (such requests wait `SVC_RECONNECT_HOLD_MS`, then `503`)",
  }),
  SVC_RELAY_POLL_MS: millis({
    min: 5,
    max: 10_000,
    default: 25,
    doc: "on a shared KV file, how often each router polls its relay inbox (one small read) and " +
      "a relayed request's answer (while it waits); with Deno Deploy's database or " +
      "`SVC_KV_URL`, where watches see every writer, forty times less often (a safety net)",
  }),
  SVC_RELAY_PICKUP_MS: millis({
    min: 50,
    max: 60_000,
    default: 1000,
    doc: "a relayed request its holding router has not picked up within this long is withdrawn " +
      "(it reached no worker) and handled like a worker held elsewhere: retried until " +
      "`SVC_RECONNECT_HOLD_MS`, then `503`",
  }),
  SVC_PROVISION_RETRY_AFTER_S: int({
    min: 1,
    max: 3600,
    default: 10,
    doc: "`Retry-After` of the 202 while a pool provisions",
  }),
  SVC_PROVISION_WEBHOOK: url({
    default: undefined,
    doc: "URL that receives demand notices for an autoscaler",
  }),
  SVC_PROVISION_WEBHOOK_TOKEN: secret({ doc: "bearer token sent to the webhook" }),
  SVC_PROVISION_WEBHOOK_INTERVAL_S: int({
    min: 1,
    max: 86_400,
    default: 30,
    doc: "at most one webhook post per (profile, bundle) per interval, and 16 across all pools " +
      "(profiles come from a client header)",
  }),
  SVC_DEMAND_WINDOW_S: int({
    min: 1,
    max: 86_400,
    default: 600,
    doc: "demand with no new request for this long is dropped",
  }),
  SVC_EMBEDDINGS_WAIT_MS: millis({
    min: 0,
    max: 600_000,
    default: 30_000,
    doc: "`/v1/embeddings` waits this long for capacity, then 503 (it never answers 202)",
  }),
  SVC_AFFINITY_SPILL_LOAD: int({
    min: 1,
    max: 1_000_000,
    default: 32,
    doc: "load at which a worker that has the model loaded stops being preferred",
  }),
  SVC_RESULT_CACHE_BYTES: int({
    min: 0,
    max: 64 * 1024 * 1024 * 1024,
    default: 64 * 1024 * 1024,
    doc: "bound on the result cache (answers, their headers and keys; least recently used " +
      "evicted first), in bytes, on top of `SVC_MAX_INFLIGHT_BODY_BYTES`; `0` turns the cache " +
      "and the coalescing of identical requests off. Per router process (isolate)",
  }),
  SVC_RESULT_CACHE_TTL_S: int({
    min: 0,
    max: 30 * 86_400,
    default: 3600,
    doc: "a cached answer is served for at most this long after it was computed (`0`: no " +
      "limit; a new model revision ends it earlier anyway)",
  }),
  SVC_RESULT_CACHE_MAX_ENTRY_BYTES: int({
    min: 1024,
    max: 1024 * 1024 * 1024,
    default: 1024 * 1024,
    doc: "largest answer body kept in the result cache (and shared with identical requests in " +
      "flight); bigger answers are passed on, never held",
  }),
  SVC_RESULT_CACHE_KV_MAX_ENTRY_BYTES: int({
    min: 0,
    max: 640 * 1024,
    default: 256 * 1024,
    doc: "in KV mode (`SVC_DIRECTORY=kv`) answers up to this size are also kept in Deno KV, a " +
      "second tier shared by every router (a hit on one is a hit on all, for " +
      "`SVC_RESULT_CACHE_TTL_S`); bigger ones stay in the router that computed them. `0`: " +
      "no shared tier",
  }),
  SVC_ROUTER_SERVER: oneOf(["auto", "node", "deno"], {
    default: "auto",
    doc: "HTTP server: `node` (node:http: a client that goes away cancels its request to the " +
      "worker, stalled connections are closed), `deno` (`Deno.serve`), `auto`: `deno` on Deno " +
      "Deploy, else `node`",
  }),
  SVC_DIRECTORY: oneOf(["memory", "kv"], {
    default: "memory",
    doc: "worker directory: `memory` (one process) or `kv` (Deno KV, many isolates)",
  }),
  SVC_KV_PATH: str({
    default: undefined,
    doc: "KV database file shared by the routers of one machine (unset: Deno Deploy's own " +
      "database); `deno task router` grants read and write on this path alone",
  }),
  SVC_KV_URL: url({
    default: undefined,
    noCredentials: "the access token goes in DENO_KV_ACCESS_TOKEN",
    doc: "KV Connect URL of a self-hosted `denokv` shared by routers on several machines " +
      "(`http(s)://host:4512`); its access token is read from `DENO_KV_ACCESS_TOKEN` (never " +
      "logged). Takes precedence over `SVC_KV_PATH`",
  }),
  SVC_KV_PREFIX: str({
    default: "svc",
    pattern: SLUG_RE,
    patternName: "a lower-case slug",
    doc: "key prefix of the KV directory",
  }),
  SVC_KV_REFRESH_MS: millis({
    min: 50,
    max: 60_000,
    default: 500,
    doc: "how often each router polls KV's change counters (directory, demand, drains: one " +
      "small read each) on a shared KV file, and re-reads what moved; with Deno Deploy's " +
      "database or `SVC_KV_URL`, where watches see every writer, ten times less often (a " +
      "safety net)",
  }),
  SVC_KV_RENEW_MS: millis({
    min: 1000,
    max: 600_000,
    default: 10_000,
    doc: "a worker's record in KV is rewritten at least this often (its liveness and load " +
      "figures); changes to what routes (models, states, drains) are written at once. Other " +
      "routers see load figures this late at most",
  }),
};

const SCHEMA = settingsSchema({ ...COMMON_FIELDS, ...ROUTER_FIELDS }, (v, issue) => {
  checkCommon(v, issue);
  const extra = parseExtraModels(v.SVC_EXTRA_MODELS);
  if (!extra.ok) issue("SVC_EXTRA_MODELS", extra.problem);
  if (v.SVC_FLEET_MAX_MODELS !== undefined && v.SVC_FLEET_MAX_MODELS < v.SVC_WORKER_MAX_MODELS) {
    issue("SVC_FLEET_MAX_MODELS", "must be at least SVC_WORKER_MAX_MODELS");
  }
  if (v.SVC_WORKER_CONNECTION_WINDOW_BYTES < v.SVC_WORKER_STREAM_WINDOW_BYTES) {
    issue("SVC_WORKER_CONNECTION_WINDOW_BYTES", "must be at least SVC_WORKER_STREAM_WINDOW_BYTES");
  }
  if (v.SVC_WORKER_STALE_MS < 2 * v.SVC_HEARTBEAT_INTERVAL_MS) {
    issue("SVC_WORKER_STALE_MS", "must be at least twice SVC_HEARTBEAT_INTERVAL_MS");
  }
  // A well-behaved worker sends a ping and a status frame on the router's beat (and answers
  // pings): twice that must stay under the cap.
  const beat = 1000 / v.SVC_HEARTBEAT_INTERVAL_MS + 1000 / v.SVC_STATUS_INTERVAL_MS;
  if (v.SVC_WORKER_MAX_FRAMES_PER_S < Math.ceil(2 * beat) + 2) {
    issue(
      "SVC_WORKER_MAX_FRAMES_PER_S",
      `must be at least ${Math.ceil(2 * beat) + 2} with these heartbeat and status intervals`,
    );
  }
});

/** What the fleet caps are for; each explicit setting overrides its derived default. */
function fleetCaps(v: {
  SVC_FLEET_WORKERS: number;
  SVC_WORKER_MAX_MODELS: number;
  SVC_FLEET_MAX_CONNECTIONS: number | undefined;
  SVC_FLEET_MAX_MODELS: number | undefined;
  SVC_FLEET_MAX_STATUS_BYTES_PER_S: number | undefined;
}): FleetCaps {
  const n = v.SVC_FLEET_WORKERS;
  return {
    maxConnections: v.SVC_FLEET_MAX_CONNECTIONS ?? FLEET_SIZED.connections * n,
    maxModels: v.SVC_FLEET_MAX_MODELS ??
      Math.max(FLEET_SIZED.models * n, v.SVC_WORKER_MAX_MODELS),
    maxBytesPerS: v.SVC_FLEET_MAX_STATUS_BYTES_PER_S ??
      Math.max(FLEET_SIZED.bytesPerS * n, 64 * 1024),
  };
}

/** Every variable the router reads. */
export const ROUTER_SETTING_NAMES: readonly string[] = SCHEMA.names;

/** The router's section of the configuration reference (docs/configuration.md). */
export const ROUTER_REFERENCE: readonly ReferenceSection[] = [
  { id: "router", fields: ROUTER_FIELDS },
];

/** Where the worker directory lives. */
export type DirectoryKind = DirectorySettings["kind"];

/** The router's parsed variables, keyed by name. */
type Values = SchemaValues<typeof SCHEMA>;

/** How requests pick their pool and worker: slice key to variable. */
const POOLS = {
  /** Pool used when a request has no machine-profile header. */
  defaultMachineProfile: "SVC_DEFAULT_MACHINE_PROFILE",
  /** `/readyz` is 503 while the default pool (or, without one, the fleet) has no serving worker. */
  readyRequiresWorker: "SVC_READYZ_REQUIRE_WORKER",
  /** Profiles accepted besides the default and the pools of registered workers. */
  machineProfiles: "SVC_MACHINE_PROFILES",
  /** A loaded worker with at least this load lets an idle worker take the request instead. */
  affinitySpillLoad: "SVC_AFFINITY_SPILL_LOAD",
} as const satisfies SliceMap<Values>;

/** How requests pick their pool and worker. */
export type PoolSettings = SliceOf<Values, typeof POOLS> & {
  /** Model → bundle pairs of `SVC_EXTRA_MODELS`. */
  extraModels: ReadonlyMap<string, string>;
};

/** The fleet's timing, told to workers at registration: slice key to variable. */
const FLEET_TIMING = {
  /** Silence after which a worker is removed. */
  workerStaleMs: "SVC_WORKER_STALE_MS",
  heartbeatIntervalMs: "SVC_HEARTBEAT_INTERVAL_MS",
  statusIntervalMs: "SVC_STATUS_INTERVAL_MS",
} as const satisfies SliceMap<Values>;

/** The fleet's timing, told to workers at registration. */
export type FleetTiming = SliceOf<Values, typeof FLEET_TIMING>;

/** What one worker socket may do. */
export interface FleetLimits {
  /** Most models one worker may announce; further ones are ignored. */
  maxModelsPerWorker: number;
  /** Most frames per second on one socket; beyond it the socket is closed. */
  maxFramesPerS: number;
  /** Non-empty: advertised URLs must be IP literals inside one of these. */
  allowedNetworks: Network[];
  /** What all fleet sockets together may cost (router/fleet/budget.ts). */
  caps: FleetCaps;
  /** What one worker's request streams may hold (connection transport). */
  streams: StreamCaps;
}

/** Caps of the request streams over one worker's connection: slice key to variable. */
const STREAMS = {
  /** Streams open at once. */
  maxStreams: "SVC_WORKER_MAX_STREAMS",
  /** Unread answer bytes per stream, and per connection. */
  streamWindowBytes: "SVC_WORKER_STREAM_WINDOW_BYTES",
  connectionWindowBytes: "SVC_WORKER_CONNECTION_WINDOW_BYTES",
} as const satisfies SliceMap<Values>;

/** Caps of the request streams over one worker's connection. */
export type StreamCaps = SliceOf<Values, typeof STREAMS>;

/** Answers for a pool without capacity, and the demand signal: slice key to variable. */
const PROVISIONING = {
  /** `Retry-After` of a provisioning 202. */
  retryAfterS: "SVC_PROVISION_RETRY_AFTER_S",
  /** Time window over which unserved requests count as pending demand. */
  demandWindowS: "SVC_DEMAND_WINDOW_S",
  /** How long `/v1/embeddings` waits for capacity before answering 503. */
  embeddingsWaitMs: "SVC_EMBEDDINGS_WAIT_MS",
  /** After start, how long a request waits for its pool's workers instead of a 202. */
  startupHoldMs: "SVC_STARTUP_HOLD_MS",
  /** How long a request waits for a worker held only by other instances to be reachable. */
  reconnectHoldMs: "SVC_RECONNECT_HOLD_MS",
} as const satisfies SliceMap<Values>;

/** Answers for a pool without capacity, and the demand signal. */
export type ProvisioningSettings = SliceOf<Values, typeof PROVISIONING> & {
  /** Where demand notices go; undefined disables the webhook. */
  webhook: { url: string; token: string | undefined; intervalS: number } | undefined;
};

/** The relay of requests between router instances through KV: slice key to variable. */
const RELAY = {
  /** Largest request or answer body relayed; 0: no relay. */
  maxBodyBytes: "SVC_RELAY_MAX_BODY_BYTES",
  /** Poll interval of the inbox and of an answer on a shared file. */
  pollMs: "SVC_RELAY_POLL_MS",
  /** A request not claimed by its holder within this long is withdrawn. */
  pickupMs: "SVC_RELAY_PICKUP_MS",
} as const satisfies SliceMap<Values>;

/** The relay of requests between router instances through KV (router/fleet/relay/). */
export type RelaySettings = SliceOf<Values, typeof RELAY>;

/** Where the worker directory lives and how it is kept: slice key to variable. */
const DIRECTORY = {
  kind: "SVC_DIRECTORY",
  /** Deno KV path; undefined = Deno.openKv() default (Deno Deploy's database). */
  kvPath: "SVC_KV_PATH",
  /** KV Connect URL of a self-hosted denokv (wins over the path). */
  kvUrl: "SVC_KV_URL",
  kvPrefix: "SVC_KV_PREFIX",
  /** How often the KV directory polls its change counter. */
  kvRefreshMs: "SVC_KV_REFRESH_MS",
  /** A worker's KV record is rewritten at least this often. */
  kvRenewMs: "SVC_KV_RENEW_MS",
  /** Silence after which a worker is removed. */
  staleMs: "SVC_WORKER_STALE_MS",
} as const satisfies SliceMap<Values>;

/** Where the worker directory lives and how it is kept. */
export type DirectorySettings = SliceOf<Values, typeof DIRECTORY> & {
  /** How much of what workers reported is remembered. */
  learned: LearnedLimits;
};

/** The result cache at the edge (router/cache): slice key to variable. */
const RESULT_CACHE = {
  /** Bound on everything the cache holds; 0: no cache and no coalescing. */
  maxBytes: "SVC_RESULT_CACHE_BYTES",
  /** Largest answer body cached or shared. */
  maxEntryBytes: "SVC_RESULT_CACHE_MAX_ENTRY_BYTES",
  /** Largest answer body also kept in KV (KV mode; 0: no shared tier). */
  kvMaxEntryBytes: "SVC_RESULT_CACHE_KV_MAX_ENTRY_BYTES",
} as const satisfies SliceMap<Values>;

/** The result cache at the edge (router/cache). */
export type ResultCacheSettings = SliceOf<Values, typeof RESULT_CACHE> & {
  /** Answers older than this are not served; 0: no age limit. */
  ttlMs: number;
};

/** The router's settings, in the slices its parts receive. */
export interface RouterSettings {
  listen: { host: string; port: number };
  /** Which HTTP server serves (router/http_server.ts). */
  server: ServerKind;
  /** Token workers must present; undefined means every worker is refused. */
  workerToken: string | undefined;
  /** Client API keys; empty means the API is open. */
  apiKeys: string[];
  /** Admin keys (operator actions, fleet detail); empty: only a local stack grants those. */
  adminKeys: string[];
  /** With API keys set, the fleet's status (health, metrics, dashboard, streams) stays open. */
  statusPublic: boolean;
  /**
   * The fleet's worker secret (`SVC_WORKER_API_KEY`): workers get keys derived from it and prove
   * their ids with it; it is never sent. Undefined: workers have no key.
   */
  workerApiKey: string | undefined;
  /** Clients see `X-SVC-Worker-ID` on proxied answers. */
  exposeWorkerId: boolean;
  pools: PoolSettings;
  fleet: FleetTiming;
  fleetLimits: FleetLimits;
  /** How much of the fleet its views (health, dashboard, status stream) list. */
  views: ViewLimits;
  /** Bound on one proxied request, from send to the last byte of the answer. */
  upstreamTimeoutMs: number;
  provisioning: ProvisioningSettings;
  resultCache: ResultCacheSettings;
  /** Which requests dropped by a dying worker are replayed (router/proxy/replay.ts). */
  replay: ReplaySettings;
  /** The relay between router instances through KV (KV mode only). */
  relay: RelaySettings;
  directory: DirectorySettings;
  /** Input limits, the same settings the worker reads. */
  limits: InputLimits;
  /** Body reading and connection bounds, the same settings the worker reads. */
  http: HttpSettings;
  /** How browsers are treated (CORS, Origin, Host), the same settings the worker reads. */
  browser: BrowserPolicy;
  log: LogSettings;
  /** Secret values (tokens, keys) that must never appear in a log line. */
  secrets: string[];
  /** Warnings to log at start (unknown `SVC_*` variables, with the closest known name). */
  warnings: string[];
}

/**
 * Parse the router's settings; throws a ConfigError naming every bad variable. `alsoKnown`:
 * other settings read in this process (`deno task start`: the worker's), which are not typos.
 */
export function loadRouterSettings(env: Env, alsoKnown: readonly string[] = []): RouterSettings {
  const v = SCHEMA.load(env);
  // A key variable that is present but holds no key is a mistake (an empty secret, a template
  // left unfilled), never a wish for an open API: refuse rather than serve without keys.
  for (const name of ["SVC_API_KEYS", "SVC_ADMIN_KEYS"] as const) {
    if (env[name] !== undefined && v[name].length === 0) {
      throw new ConfigError([{
        name,
        message: "is set but holds no key (unset it to run without such keys)",
      }]);
    }
  }
  const unknown = unknownSettingsWarning(env, [...SCHEMA.names, ...alsoKnown]);
  const extra = parseExtraModels(v.SVC_EXTRA_MODELS);
  return {
    listen: { host: v.SVC_HOST, port: v.SVC_PORT },
    server: v.SVC_ROUTER_SERVER,
    workerToken: v.SVC_WORKER_TOKEN,
    apiKeys: v.SVC_API_KEYS,
    adminKeys: v.SVC_ADMIN_KEYS,
    statusPublic: v.SVC_STATUS_PUBLIC,
    workerApiKey: v.SVC_WORKER_API_KEY,
    exposeWorkerId: v.SVC_EXPOSE_WORKER_ID,
    pools: {
      ...sliceOf(v, POOLS),
      extraModels: extra.ok ? extra.bundles : new Map(), // checked by the schema
    },
    fleet: sliceOf(v, FLEET_TIMING),
    fleetLimits: {
      maxModelsPerWorker: v.SVC_WORKER_MAX_MODELS,
      maxFramesPerS: v.SVC_WORKER_MAX_FRAMES_PER_S,
      allowedNetworks: v.SVC_WORKER_ALLOWED_NETWORKS.map((c) => parseCidr(c)!),
      streams: sliceOf(v, STREAMS),
      caps: fleetCaps(v),
    },
    views: { maxWorkers: v.SVC_FLEET_VIEW_MAX_WORKERS, maxModels: v.SVC_FLEET_VIEW_MAX_MODELS },
    upstreamTimeoutMs: v.SVC_UPSTREAM_TIMEOUT_MS,
    provisioning: {
      ...sliceOf(v, PROVISIONING),
      webhook: v.SVC_PROVISION_WEBHOOK === undefined ? undefined : {
        url: v.SVC_PROVISION_WEBHOOK,
        token: v.SVC_PROVISION_WEBHOOK_TOKEN,
        intervalS: v.SVC_PROVISION_WEBHOOK_INTERVAL_S,
      },
    },
    replay: {
      maxBodyBytes: v.SVC_REPLAY_MAX_BODY_BYTES,
      budgetPercent: v.SVC_RETRY_BUDGET_PERCENT,
      budgetMin: v.SVC_RETRY_BUDGET_MIN,
      rememberBodies: v.SVC_REPLAY_REMEMBER_BODIES,
    },
    relay: sliceOf(v, RELAY),
    resultCache: { ...sliceOf(v, RESULT_CACHE), ttlMs: v.SVC_RESULT_CACHE_TTL_S * 1000 },
    directory: {
      ...sliceOf(v, DIRECTORY),
      learned: { maxModels: v.SVC_MAX_LEARNED_MODELS, ttlMs: DEFAULT_LEARNED.ttlMs },
    },
    limits: limitsOf(v),
    http: httpSettingsOf(v, ROUTER_INFLIGHT_BODY_BYTES),
    browser: browserPolicyOf(v),
    log: logSettingsOf(v),
    secrets: SCHEMA.secretsOf(v),
    warnings: unknown ? [unknown] : [],
  };
}
