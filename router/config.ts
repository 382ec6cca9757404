/**
 * Router configuration: every setting is an `SVC_*` environment variable, parsed and validated
 * once at start-up. A bad value throws an Error that names the variable (never its value when
 * the variable is a secret).
 */
import { SLUG_RE, workerTokenProblem } from "@svc/shared/fleet/protocol";
import { type InputLimits, limitsFromEnv } from "@svc/shared/codec/limits";

/** Where the worker directory lives. */
export type DirectoryKind = "memory" | "kv";

/** Validated router settings. */
export interface RouterConfig {
  port: number;
  host: string;
  /** Token workers must present; undefined means every worker is refused. */
  workerToken: string | undefined;
  /** Client API keys; empty means the API is open. */
  apiKeys: string[];
  /** Pool used when a request has no machine-profile header. */
  defaultMachineProfile: string | undefined;
  /** When non-empty, the only machine profiles a request may name. */
  machineProfiles: string[];
  /** Silence after which a worker is removed. */
  workerStaleMs: number;
  /** Interval at which workers send heartbeats (told to them at registration). */
  heartbeatIntervalMs: number;
  /** Interval at which workers send status (told to them at registration). */
  statusIntervalMs: number;
  /** Bound on one proxied request, from send to the last byte of the answer. */
  upstreamTimeoutMs: number;
  /** Input limits, the same settings the worker reads (`SVC_MAX_BODY_BYTES`, ...). */
  limits: InputLimits;
  /** `Retry-After` of a provisioning 202. */
  provisionRetryAfterS: number;
  /** URL that receives demand notices; undefined disables the webhook. */
  provisionWebhook: string | undefined;
  /** Bearer token sent to the webhook. */
  provisionWebhookToken: string | undefined;
  /** Minimum time between two webhook posts for the same (profile, bundle). */
  provisionWebhookIntervalS: number;
  /** Time window over which unserved requests count as pending demand. */
  demandWindowS: number;
  /** How long `/v1/embeddings` waits for capacity before answering 503. */
  embeddingsWaitMs: number;
  /** A loaded worker with at least this load lets an idle worker take the request instead. */
  affinitySpillLoad: number;
  directory: DirectoryKind;
  /** Deno KV path; undefined = Deno.openKv() default (Deno Deploy's database). */
  kvPath: string | undefined;
  kvPrefix: string;
  /** How often the KV directory re-reads the fleet. */
  kvRefreshMs: number;
  logJson: boolean;
  logLevel: "debug" | "info" | "warn" | "error";
}

/** Environment as a plain record (Deno.env.toObject() or a test's literal). */
export type Env = Record<string, string | undefined>;

/** Variables that have a default. */
export type DefaultedVariable =
  | "SVC_PORT"
  | "SVC_HOST"
  | "SVC_WORKER_STALE_MS"
  | "SVC_HEARTBEAT_INTERVAL_MS"
  | "SVC_STATUS_INTERVAL_MS"
  | "SVC_UPSTREAM_TIMEOUT_MS"
  | "SVC_PROVISION_RETRY_AFTER_S"
  | "SVC_PROVISION_WEBHOOK_INTERVAL_S"
  | "SVC_DEMAND_WINDOW_S"
  | "SVC_EMBEDDINGS_WAIT_MS"
  | "SVC_AFFINITY_SPILL_LOAD"
  | "SVC_DIRECTORY"
  | "SVC_KV_PREFIX"
  | "SVC_KV_REFRESH_MS"
  | "SVC_LOG_LEVEL";

/** Settings table: variable name → default, used by the parser and by the README. */
export const ROUTER_DEFAULTS: Readonly<Record<DefaultedVariable, string>> = {
  SVC_PORT: "8080",
  SVC_HOST: "0.0.0.0",
  SVC_WORKER_STALE_MS: "3000",
  SVC_HEARTBEAT_INTERVAL_MS: "500",
  SVC_STATUS_INTERVAL_MS: "1000",
  SVC_UPSTREAM_TIMEOUT_MS: "150000",
  SVC_PROVISION_RETRY_AFTER_S: "10",
  SVC_PROVISION_WEBHOOK_INTERVAL_S: "30",
  SVC_DEMAND_WINDOW_S: "600",
  SVC_EMBEDDINGS_WAIT_MS: "30000",
  SVC_AFFINITY_SPILL_LOAD: "32",
  SVC_DIRECTORY: "memory",
  SVC_KV_PREFIX: "svc",
  SVC_KV_REFRESH_MS: "500",
  SVC_LOG_LEVEL: "info",
};

/** Read a variable, treating an empty string as unset. */
function read(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

/** Parse an integer variable within bounds, falling back to the table default. */
function int(env: Env, name: DefaultedVariable, min: number, max: number): number {
  const raw = read(env, name) ?? ROUTER_DEFAULTS[name];
  if (!/^-?\d+$/.test(raw)) throw new Error(`${name} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new Error(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** Parse an http(s) URL variable; the message omits the value (it may carry credentials). */
function url(env: Env, name: string): string | undefined {
  const raw = read(env, name);
  if (raw === undefined) return undefined;
  try {
    const u = new URL(raw);
    if (u.protocol === "http:" || u.protocol === "https:") return u.toString();
  } catch {
    // fall through to the error below
  }
  throw new Error(`${name} must be an http(s) URL`);
}

/** Parse a profile-like slug variable (lower-cased). */
function slug(env: Env, name: string): string | undefined {
  const raw = read(env, name)?.toLowerCase();
  if (raw === undefined) return undefined;
  if (!SLUG_RE.test(raw)) throw new Error(`${name} must be a lower-case slug, got "${raw}"`);
  return raw;
}

/** Parse a comma-separated list, dropping empty entries. */
function list(env: Env, name: string): string[] {
  return (read(env, name) ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
}

/** Parse and validate the router settings; throws an Error naming the first bad variable. */
export function parseRouterConfig(env: Env): RouterConfig {
  const workerToken = read(env, "SVC_WORKER_TOKEN");
  const tokenProblem = workerToken === undefined ? undefined : workerTokenProblem(workerToken);
  if (tokenProblem) throw new Error(tokenProblem);
  const apiKeys = list(env, "SVC_API_KEYS");
  for (const k of apiKeys) {
    if (k.length < 8 || /\s/.test(k)) {
      throw new Error("SVC_API_KEYS entries must be at least 8 characters without whitespace");
    }
  }
  const machineProfiles = list(env, "SVC_MACHINE_PROFILES").map((p) => p.toLowerCase());
  for (const p of machineProfiles) {
    if (!SLUG_RE.test(p)) throw new Error(`SVC_MACHINE_PROFILES entry "${p}" is not a slug`);
  }
  const directory = read(env, "SVC_DIRECTORY") ?? ROUTER_DEFAULTS.SVC_DIRECTORY;
  if (directory !== "memory" && directory !== "kv") {
    throw new Error(`SVC_DIRECTORY must be "memory" or "kv", got "${directory}"`);
  }
  const logLevel = read(env, "SVC_LOG_LEVEL") ?? ROUTER_DEFAULTS.SVC_LOG_LEVEL;
  if (!["debug", "info", "warn", "error"].includes(logLevel)) {
    throw new Error(`SVC_LOG_LEVEL must be debug, info, warn or error, got "${logLevel}"`);
  }
  const kvPrefix = read(env, "SVC_KV_PREFIX") ?? ROUTER_DEFAULTS.SVC_KV_PREFIX;
  if (!SLUG_RE.test(kvPrefix)) throw new Error(`SVC_KV_PREFIX must be a slug, got "${kvPrefix}"`);
  const defaultMachineProfile = slug(env, "SVC_DEFAULT_MACHINE_PROFILE");
  if (
    defaultMachineProfile !== undefined && machineProfiles.length > 0 &&
    !machineProfiles.includes(defaultMachineProfile)
  ) {
    throw new Error("SVC_DEFAULT_MACHINE_PROFILE must be one of SVC_MACHINE_PROFILES");
  }
  const heartbeatIntervalMs = int(env, "SVC_HEARTBEAT_INTERVAL_MS", 50, 60_000);
  const workerStaleMs = int(env, "SVC_WORKER_STALE_MS", 200, 600_000);
  if (workerStaleMs < 2 * heartbeatIntervalMs) {
    throw new Error("SVC_WORKER_STALE_MS must be at least twice SVC_HEARTBEAT_INTERVAL_MS");
  }
  return {
    port: int(env, "SVC_PORT", 0, 65535),
    host: read(env, "SVC_HOST") ?? ROUTER_DEFAULTS.SVC_HOST,
    workerToken,
    apiKeys,
    defaultMachineProfile,
    machineProfiles,
    workerStaleMs,
    heartbeatIntervalMs,
    statusIntervalMs: int(env, "SVC_STATUS_INTERVAL_MS", 50, 60_000),
    upstreamTimeoutMs: int(env, "SVC_UPSTREAM_TIMEOUT_MS", 100, 3_600_000),
    limits: limitsFromEnv(env),
    provisionRetryAfterS: int(env, "SVC_PROVISION_RETRY_AFTER_S", 1, 3600),
    provisionWebhook: url(env, "SVC_PROVISION_WEBHOOK"),
    provisionWebhookToken: read(env, "SVC_PROVISION_WEBHOOK_TOKEN"),
    provisionWebhookIntervalS: int(env, "SVC_PROVISION_WEBHOOK_INTERVAL_S", 1, 86_400),
    demandWindowS: int(env, "SVC_DEMAND_WINDOW_S", 1, 86_400),
    embeddingsWaitMs: int(env, "SVC_EMBEDDINGS_WAIT_MS", 0, 600_000),
    affinitySpillLoad: int(env, "SVC_AFFINITY_SPILL_LOAD", 1, 1_000_000),
    directory,
    kvPath: read(env, "SVC_KV_PATH"),
    kvPrefix,
    kvRefreshMs: int(env, "SVC_KV_REFRESH_MS", 50, 60_000),
    logJson: read(env, "SVC_LOG_JSON") === "1" || read(env, "SVC_LOG_JSON") === "true",
    logLevel: logLevel as RouterConfig["logLevel"],
  };
}
