/**
 * Fleet settings of a worker, from its environment. A bad value throws an Error naming the
 * variable; the worker token's value never appears in a message.
 */
import { FLEET_PATH, SLUG_RE, WORKER_ID_RE, workerTokenProblem } from "@svc/shared/fleet/protocol";

/** Validated fleet settings. */
export interface FleetConfig {
  /** ws(s) URL of the router's fleet endpoint. */
  routerWsUrl: string;
  token: string;
  workerId: string;
  /** Base URL the router uses to reach this worker. */
  advertiseUrl: string;
  /** From SVC_MACHINE_PROFILE; undefined means "detect the GPU type". */
  machineProfile: string | undefined;
  bundle: string;
  /** From SVC_POOL; undefined means "same as the machine profile". */
  pool: string | undefined;
  /** Cap of the reconnect backoff. */
  reconnectMaxMs: number;
}

/** Defaults of the fleet variables (for the README table). */
export const FLEET_DEFAULTS = {
  SVC_BUNDLE: "default",
  SVC_ROUTER_RECONNECT_MAX_MS: "10000",
} as const;

function read(env: Record<string, string | undefined>, name: string): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === "" ? undefined : v;
}

/** `http://r:8080/base` → `ws://r:8080/base/fleet/v1/connect` (ws URLs keep their scheme). */
export function fleetUrlOf(routerUrl: string): string {
  let u: URL;
  try {
    u = new URL(routerUrl);
  } catch {
    throw new Error("SVC_ROUTER_URL must be an http(s) or ws(s) URL");
  }
  const schemes: Record<string, string> = {
    "http:": "ws:",
    "https:": "wss:",
    "ws:": "ws:",
    "wss:": "wss:",
  };
  const scheme = schemes[u.protocol];
  if (!scheme) throw new Error("SVC_ROUTER_URL must be an http(s) or ws(s) URL");
  if (u.username || u.password) {
    throw new Error("SVC_ROUTER_URL must not contain credentials (use SVC_WORKER_TOKEN)");
  }
  const base = u.pathname.replace(/\/+$/, "");
  const path = base.endsWith(FLEET_PATH) ? base : base + FLEET_PATH;
  return `${scheme}//${u.host}${path}`;
}

/** Default worker id: `<hostname>-<pid>-<random>`, reduced to the characters ids allow. */
export function defaultWorkerId(): string {
  let host = "worker";
  try {
    host = Deno.hostname();
  } catch {
    // No sys permission (tests): the generic prefix is fine, the random part keeps ids unique.
  }
  const clean = host.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[^A-Za-z0-9]+/, "").slice(0, 80);
  const rand = crypto.randomUUID().slice(0, 8);
  return `${clean || "worker"}-${Deno.pid}-${rand}`;
}

function slug(env: Record<string, string | undefined>, name: string): string | undefined {
  const v = read(env, name)?.toLowerCase();
  if (v !== undefined && !SLUG_RE.test(v)) {
    throw new Error(`${name} must be a lower-case slug (a-z, 0-9, '.', '_', '-'), got "${v}"`);
  }
  return v;
}

/** The bundle this worker serves (`SVC_BUNDLE`, normalised): what it serves and what it announces. */
export function workerBundle(env: Record<string, string | undefined>): string {
  return slug(env, "SVC_BUNDLE") ?? FLEET_DEFAULTS.SVC_BUNDLE;
}

/** Parse the fleet settings; null when SVC_ROUTER_URL is unset (a standalone worker). */
export function parseFleetConfig(
  env: Record<string, string | undefined>,
  port: number,
): FleetConfig | null {
  const routerUrl = read(env, "SVC_ROUTER_URL");
  if (routerUrl === undefined) return null;
  const routerWsUrl = fleetUrlOf(routerUrl);
  const token = read(env, "SVC_WORKER_TOKEN");
  if (token === undefined) {
    throw new Error("SVC_WORKER_TOKEN is required when SVC_ROUTER_URL is set");
  }
  const tokenProblem = workerTokenProblem(token);
  if (tokenProblem) throw new Error(tokenProblem);
  const workerId = read(env, "SVC_WORKER_ID") ?? defaultWorkerId();
  if (!WORKER_ID_RE.test(workerId)) {
    throw new Error(
      "SVC_WORKER_ID must be 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':', '-' (starting alphanumeric)",
    );
  }
  const advertiseUrl = read(env, "SVC_ADVERTISE_URL") ?? `http://127.0.0.1:${port}`;
  try {
    const u = new URL(advertiseUrl);
    if ((u.protocol !== "http:" && u.protocol !== "https:") || u.username || u.password) {
      throw new Error();
    }
  } catch {
    throw new Error("SVC_ADVERTISE_URL must be an http(s) URL without credentials");
  }
  const reconnectRaw = read(env, "SVC_ROUTER_RECONNECT_MAX_MS") ??
    FLEET_DEFAULTS.SVC_ROUTER_RECONNECT_MAX_MS;
  const reconnectMaxMs = Number(reconnectRaw);
  if (!/^\d+$/.test(reconnectRaw) || reconnectMaxMs < 100 || reconnectMaxMs > 600_000) {
    throw new Error("SVC_ROUTER_RECONNECT_MAX_MS must be an integer between 100 and 600000");
  }
  return {
    routerWsUrl,
    token,
    workerId,
    advertiseUrl: advertiseUrl.replace(/\/+$/, ""),
    machineProfile: slug(env, "SVC_MACHINE_PROFILE"),
    bundle: workerBundle(env),
    pool: slug(env, "SVC_POOL"),
    reconnectMaxMs,
  };
}
