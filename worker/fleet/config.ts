/**
 * The fleet link's configuration: the fleet slice of the worker's settings, completed with what
 * is only known once the HTTP server listens (the port behind the default advertised URL).
 */
import { FLEET_PATH } from "@svc/shared/fleet/protocol";
import type { FleetSettings } from "../config/settings.ts";

/** What the fleet link runs with: the fleet settings, with the advertised URL known. */
export type FleetConfig = FleetSettings;

/**
 * The link's configuration for a worker listening on `port` (null: no HTTP server): with the
 * HTTP transport the advertised URL defaults to loopback at that port; the connection transport
 * announces one only when it is set.
 */
export function fleetConfigOf(fleet: FleetSettings, port: number | null): FleetConfig {
  const fallback = fleet.transport === "http" && port !== null
    ? `http://127.0.0.1:${port}`
    : undefined;
  return { ...fleet, advertiseUrl: fleet.advertiseUrl ?? fallback };
}

/** What is wrong with one entry of `SVC_ROUTER_URL` (never quoting it), or undefined. */
export function routerUrlProblem(entry: string): string | undefined {
  try {
    fleetUrlOf(entry);
    return undefined;
  } catch (err) {
    return (err as Error).message.replace(/^SVC_ROUTER_URL /, "entries ");
  }
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
