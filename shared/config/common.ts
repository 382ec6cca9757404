/**
 * Settings both processes read with the same meaning: listen address, logging, the fleet's worker
 * token and the input limits. Declared once here so router and worker cannot drift apart.
 */
import { DEFAULT_LIMITS, type InputLimits, LIMIT_MAX } from "../codec/limits.ts";
import { workerTokenProblem } from "../fleet/protocol.ts";
import { LOG_LEVELS, type LogLevel } from "../log/level.ts";
import type { BodyReadOptions } from "../http/read_body.ts";
import { bool, int, list, millis, oneOf, secret, type Setting, str } from "./fields.ts";
import { type BrowserPolicy, corsOriginProblem, normaliseOrigins } from "../http/browser_guard.ts";
import type { PeerCaps } from "../http/peer_limits.ts";

/** Values of {@link COMMON_FIELDS}. */
export interface CommonValues {
  SVC_PORT: number;
  SVC_HOST: string;
  SVC_LOG_JSON: boolean;
  SVC_LOG_LEVEL: LogLevel;
  SVC_WORKER_TOKEN: string | undefined;
  SVC_WORKER_API_KEY: string | undefined;
  SVC_MAX_BODY_BYTES: number;
  SVC_MAX_NESTING_DEPTH: number;
  SVC_MAX_ITEMS: number;
  SVC_MAX_STRING_LENGTH: number;
  SVC_MAX_OBJECT_KEYS: number;
  SVC_MAX_VALUES: number;
  SVC_MAX_INFLIGHT_BODY_BYTES: number | undefined;
  SVC_BODY_IDLE_TIMEOUT_MS: number;
  SVC_HEADERS_TIMEOUT_MS: number;
  SVC_REQUEST_TIMEOUT_MS: number;
  SVC_MAX_STATUS_SUBSCRIBERS: number;
  SVC_CORS_ORIGINS: string[];
  SVC_MAX_CONNECTIONS_PER_PEER: number;
  SVC_MAX_INFLIGHT_PER_PEER: number;
}

/** A limit setting from the codec's default and bound of `key`. */
function limit(key: keyof InputLimits, doc: string, shown?: string): Setting<number> {
  return int({ min: 1, max: LIMIT_MAX[key], default: DEFAULT_LIMITS[key], doc, shown });
}

/** Settings of router and worker alike. */
export const COMMON_FIELDS: { readonly [K in keyof CommonValues]: Setting<CommonValues[K]> } = {
  SVC_PORT: int({ min: 0, max: 65535, default: 8080, doc: "listen port (`0`: any free port)" }),
  SVC_HOST: str({ default: "0.0.0.0", doc: "listen address" }),
  SVC_LOG_JSON: bool({ default: false, doc: "one JSON object per log line instead of text" }),
  SVC_LOG_LEVEL: oneOf(LOG_LEVELS, {
    default: "info",
    doc: "least severe level logged: `debug`, `info`, `warn` or `error`",
  }),
  SVC_WORKER_TOKEN: secret({
    doc: "the fleet's shared secret (at least 16 characters, compared in constant time, never " +
      "logged). Router: workers must present it (unset refuses every worker). Worker: required " +
      "with `SVC_ROUTER_URL`",
    check: workerTokenProblem,
  }),
  SVC_WORKER_API_KEY: secret({
    doc: "the fleet's worker secret, the same on router and workers (at least 16 characters, " +
      "never logged, never sent). Worker: every path but `/healthz` and `/readyz` needs " +
      "`Authorization: Bearer` with this key or the worker's own key derived from it, so it " +
      "cannot be used around the router; its registrations prove its `SVC_WORKER_ID`. Router: " +
      "sends each worker its own derived key (which opens no other worker), and registers a " +
      "worker under the id it asks for only with a valid proof (others get an id of the " +
      "router's)",
    check: (v) => v.length < 16 ? "must be at least 16 characters" : undefined,
  }),
  SVC_MAX_BODY_BYTES: limit(
    "maxBodyBytes",
    "largest request body, in bytes (router and worker)",
    "`33554432` (32 MiB)",
  ),
  SVC_MAX_NESTING_DEPTH: limit("maxDepth", "nesting depth of JSON/msgpack bodies"),
  SVC_MAX_ITEMS: limit("maxItems", "items (and list entries) per request"),
  SVC_MAX_STRING_LENGTH: limit("maxStringLength", "characters per string"),
  SVC_MAX_OBJECT_KEYS: limit(
    "maxObjectKeys",
    "keys of one JSON object or msgpack map (checked before the body is parsed)",
  ),
  SVC_MAX_VALUES: limit("maxValues", "values of any kind, keys included, in one request body"),
  SVC_MAX_INFLIGHT_BODY_BYTES: int({
    min: 1024,
    max: 64 * 1024 * 1024 * 1024,
    default: undefined,
    shown: "`268435456` (256 MiB)",
    doc: "request-body bytes held at once, all requests together, as they arrive: by a worker " +
      "while bodies are read, by the router until each answer is sent; past it `503 " +
      "QUEUE_FULL`, `Retry-After: 1`. Router default 128 MiB. At least `SVC_MAX_BODY_BYTES`",
  }),
  SVC_BODY_IDLE_TIMEOUT_MS: millis({
    min: 100,
    max: 3_600_000,
    default: 30_000,
    doc: "a request body with no new bytes for this long is abandoned with 408 and its " +
      "connection closed",
  }),
  SVC_HEADERS_TIMEOUT_MS: millis({
    min: 100,
    max: 3_600_000,
    default: 30_000,
    doc: "a connection whose request headers are incomplete after this long gets 408 and is " +
      "closed (worker; router on node:http)",
  }),
  SVC_REQUEST_TIMEOUT_MS: millis({
    min: 100,
    max: 86_400_000,
    default: 300_000,
    doc: "a request not received whole (headers and body) within this long gets 408 and is " +
      "closed, however slowly it trickles (worker; router on node:http)",
  }),
  SVC_CORS_ORIGINS: list({
    item: corsOriginProblem,
    doc: "web origins (`https://app.example.com`, `http://localhost:3000`) whose pages may call " +
      "the API and open the status streams from a browser (CORS grants and preflights; `*`: " +
      "any origin). Unset: CORS is off, and POSTs and WebSocket upgrades carrying another " +
      "origin's `Origin` are refused (403)",
  }),
  SVC_MAX_CONNECTIONS_PER_PEER: int({
    min: 0,
    max: 1_000_000,
    default: 0,
    shown: "`0` (off)",
    doc: "open connections from one client address (an IPv6 /64); past it new ones are closed " +
      "at once. For a server on a public endpoint (e.g. `256`); leave off behind a proxy or load " +
      "balancer (every client has its address) and on workers behind the router. The router " +
      "under `Deno.serve` cannot count connections",
  }),
  SVC_MAX_INFLIGHT_PER_PEER: int({
    min: 0,
    max: 1_000_000,
    default: 0,
    shown: "`0` (off)",
    doc: "requests in flight from one client address (an IPv6 /64); past it `429` with " +
      "`Retry-After: 1`. For a public endpoint (e.g. `64`); off behind a proxy and on workers " +
      "behind the router",
  }),
  SVC_MAX_STATUS_SUBSCRIBERS: int({
    min: 1,
    max: 100_000,
    default: 64,
    doc: "WebSocket status subscribers at once, all streams of the process together " +
      "(`/ws/status`, the router's `/ws/cluster-status`); beyond it `503 QUEUE_FULL`. Each gets " +
      "the one frame of a tick; one that does not read skips ticks",
  }),
};

/** Checks between common settings (run by each process's schema). */
export function checkCommon(
  v: CommonValues,
  issue: (name: keyof CommonValues & string, message: string) => void,
): void {
  if (
    v.SVC_MAX_INFLIGHT_BODY_BYTES !== undefined &&
    v.SVC_MAX_INFLIGHT_BODY_BYTES < v.SVC_MAX_BODY_BYTES
  ) {
    issue(
      "SVC_MAX_INFLIGHT_BODY_BYTES",
      "must be at least SVC_MAX_BODY_BYTES (else the largest allowed body could never be read)",
    );
  }
}

/** The input limits slice of parsed settings. */
export function limitsOf(v: CommonValues): InputLimits {
  return Object.freeze({
    maxBodyBytes: v.SVC_MAX_BODY_BYTES,
    maxDepth: v.SVC_MAX_NESTING_DEPTH,
    maxItems: v.SVC_MAX_ITEMS,
    maxStringLength: v.SVC_MAX_STRING_LENGTH,
    maxObjectKeys: v.SVC_MAX_OBJECT_KEYS,
    maxValues: v.SVC_MAX_VALUES,
  });
}

/** How the HTTP server and the body reader bound connections and bodies. */
export interface HttpSettings {
  /** Per-body bounds; the budget is created once per process from `maxInflightBodyBytes`. */
  body: Omit<BodyReadOptions, "budget" | "hold">;
  maxInflightBodyBytes: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** WebSocket status subscribers at once, all streams of the process together. */
  maxStreamClients: number;
  /** Per-peer caps (0: off). */
  peers: PeerCaps;
}

/**
 * Default in-flight body budget of a worker: bodies count only while they are read (each is
 * decoded at once), so a quarter of a gigabyte is room for many large ones.
 */
export const WORKER_INFLIGHT_BODY_BYTES = 256 * 1024 * 1024;

/**
 * Default of the router, which holds each body until its answer is sent: under a flood of large
 * bodies its resident memory grows by about the budget plus 40 MB (measured), and a router on
 * Deno Deploy has 512 MB in all.
 */
export const ROUTER_INFLIGHT_BODY_BYTES = 128 * 1024 * 1024;

/**
 * The HTTP slice of parsed settings; `inflightDefault` is the process's default budget (never
 * below the largest body, which must always fit).
 */
export function httpSettingsOf(
  v: CommonValues,
  inflightDefault: number = WORKER_INFLIGHT_BODY_BYTES,
): HttpSettings {
  return {
    body: { maxBodyBytes: v.SVC_MAX_BODY_BYTES, bodyIdleTimeoutMs: v.SVC_BODY_IDLE_TIMEOUT_MS },
    maxInflightBodyBytes: v.SVC_MAX_INFLIGHT_BODY_BYTES ??
      Math.max(inflightDefault, v.SVC_MAX_BODY_BYTES),
    headersTimeoutMs: v.SVC_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: v.SVC_REQUEST_TIMEOUT_MS,
    maxStreamClients: v.SVC_MAX_STATUS_SUBSCRIBERS,
    peers: {
      maxConnections: v.SVC_MAX_CONNECTIONS_PER_PEER,
      maxInflight: v.SVC_MAX_INFLIGHT_PER_PEER,
    },
  };
}

/** What a logger needs from the settings. */
export interface LogSettings {
  json: boolean;
  level: LogLevel;
}

/** The logging slice of parsed settings. */
export function logSettingsOf(v: CommonValues): LogSettings {
  return { json: v.SVC_LOG_JSON, level: v.SVC_LOG_LEVEL };
}

/**
 * How the process treats browsers: `SVC_CORS_ORIGINS`, and whether it listens on loopback only
 * (then `Host` must name this machine).
 */
export function browserPolicyOf(v: CommonValues): BrowserPolicy {
  const host = v.SVC_HOST.toLowerCase();
  const localOnly = host === "localhost" || host === "::1" || host === "[::1]" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  return { allowedOrigins: normaliseOrigins(v.SVC_CORS_ORIGINS), localOnly };
}
