/**
 * What a web page in the operator's browser can make a local (or any) server do. Browsers send
 * "simple" cross-site requests without asking first: a POST whose body is `text/plain`, a form or
 * multipart, or has no type at all, and WebSocket upgrades from any page. So:
 *
 * - request bodies must be `application/json` or `application/msgpack` (`application/x-msgpack`;
 *   a `charset` other than UTF-8 is refused): anything else is `415`, and the JSON a page wants to
 *   send then needs a CORS preflight, which fails unless `SVC_CORS_ORIGINS` allows the page;
 * - a POST or WebSocket upgrade that carries a foreign `Origin` (not the server's own host, not in
 *   `SVC_CORS_ORIGINS`) is `403`: that covers requests without a body too;
 * - a server listening on loopback only answers requests whose `Host` names this machine (or a
 *   host of `SVC_CORS_ORIGINS`): a page that rebinds its own name to 127.0.0.1 (DNS rebinding)
 *   is same-origin to itself but sends its own name as `Host`;
 * - CORS is off unless `SVC_CORS_ORIGINS` lists origins (or `*`): then they get the
 *   `Access-Control-*` answers, preflights included.
 *
 * Clients that are not browsers send no `Origin` and are unaffected.
 */
import { ServiceError } from "../errors.ts";
import { HeaderNames as H } from "../headers.ts";

/** How a server treats browsers. */
export interface BrowserPolicy {
  /** `SVC_CORS_ORIGINS`: origins (`scheme://host[:port]`, lower case) allowed, or `*`. */
  allowedOrigins: readonly string[];
  /** The server listens on loopback only: `Host` must name this machine. */
  localOnly: boolean;
}

/** A header's value by name (any case), as `Headers.get` or a direct request gives it. */
export type HeaderOf = (name: string) => string | undefined | null;

/** Media types of request bodies, as the codec reads them. */
const BODY_TYPES = new Set(["application/json", "application/msgpack", "application/x-msgpack"]);

/** Methods with side effects: what a cross-site page must not be able to send. */
const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** Request headers a page may send cross-origin (answered in a preflight). */
const ALLOW_HEADERS = [
  "authorization",
  "content-type",
  "accept",
  H.machineProfile.toLowerCase(),
  H.machineProfileAlias.toLowerCase(),
  H.traceId.toLowerCase(),
  H.requestId,
  // The router's result cache reads `no-store` and `no-cache` from it.
  "cache-control",
].join(", ");

/** Response headers a page may read cross-origin. */
const EXPOSE_HEADERS = [
  H.totalTime,
  H.queueTime,
  H.tokenizationTime,
  H.inferenceTime,
  H.postprocessingTime,
  H.traceId,
  H.requestId,
  H.truncatedItems,
  H.modelRevision,
  H.cache,
  H.serverVersion,
  H.serverVersionSie,
  H.workerId,
  H.retryAfter,
].join(", ");

/** Why `entry` cannot be an entry of `SVC_CORS_ORIGINS` (a phrase), or undefined. */
export function corsOriginProblem(entry: string): string | undefined {
  if (entry === "*") return undefined;
  try {
    const u = new URL(entry);
    if (/^https?:$/.test(u.protocol) && u.origin === entry.toLowerCase().replace(/\/$/, "")) {
      return undefined;
    }
  } catch {
    // reported below
  }
  return "entries must be origins such as https://app.example.com or http://localhost:3000, or *";
}

/** Normalise `SVC_CORS_ORIGINS` entries (checked by {@link corsOriginProblem}). */
export function normaliseOrigins(entries: readonly string[]): string[] {
  return entries.map((e) => e === "*" ? e : new URL(e).origin);
}

/** True when `origin` may use this server from a browser (same host, or allowed). */
export function originAllowed(origin: string, host: string | undefined, p: BrowserPolicy): boolean {
  if (p.allowedOrigins.includes("*") || p.allowedOrigins.includes(origin.toLowerCase())) {
    return true;
  }
  try {
    return host !== undefined && new URL(origin).host === host.toLowerCase();
  } catch {
    return false; // `null` (sandboxed pages, files) or garbage
  }
}

/** True for the host part of a `Host` header that names this machine. */
function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, "");
  return h === "localhost" || h.endsWith(".localhost") || h === "[::1]" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** The host name of a `Host` header (port removed, IPv6 kept in brackets). */
function hostnameOf(host: string): string {
  return host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.replace(/:\d*$/, "");
}

/**
 * The error for a request a browser must not be able to make, or undefined: a `Host` that is not
 * this machine on a loopback server, a foreign `Origin` on an upgrade or an unsafe method, or a
 * body that is not JSON or msgpack.
 */
export function browserProblem(
  method: string,
  header: HeaderOf,
  p: BrowserPolicy,
): ServiceError | undefined {
  const host = header("host") ?? undefined;
  if (p.localOnly && host !== undefined && !isLoopbackHost(hostnameOf(host))) {
    const named = p.allowedOrigins.some((o) => o !== "*" && new URL(o).host === host.toLowerCase());
    if (!named) {
      return new ServiceError(
        "FORBIDDEN",
        `Host "${host.slice(0, 100)}" does not name this machine; this server listens on ` +
          "loopback only (list other names' origins in SVC_CORS_ORIGINS)",
      );
    }
  }
  const origin = header("origin") ?? undefined;
  const upgrade = header("upgrade")?.toLowerCase() === "websocket";
  if (origin !== undefined && (upgrade || UNSAFE.has(method)) && !originAllowed(origin, host, p)) {
    return new ServiceError(
      "FORBIDDEN",
      `requests from web pages of other origins are refused (Origin ${origin.slice(0, 100)}); ` +
        "allow an origin with SVC_CORS_ORIGINS",
    );
  }
  if (UNSAFE.has(method)) return bodyTypeProblem(header);
  return undefined;
}

/** 415 unless the request's body (if any) is JSON or msgpack, in UTF-8 when it says a charset. */
export function bodyTypeProblem(header: HeaderOf): ServiceError | undefined {
  const type = header("content-type")?.trim();
  if (!type) {
    const length = header("content-length")?.trim();
    const hasBody = header("transfer-encoding") != null || (!!length && length !== "0");
    if (!hasBody) return undefined; // e.g. POST /v1/admin/workers/{id}/drain
    return unsupported(
      "a request body needs Content-Type: application/json or application/msgpack",
    );
  }
  const [media, ...params] = type.split(";");
  const m = media.trim().toLowerCase();
  if (!BODY_TYPES.has(m)) {
    return unsupported(
      `Content-Type ${m.slice(0, 100)} is not accepted: send application/json or ` +
        "application/msgpack",
    );
  }
  for (const param of params) {
    const [k, v = ""] = param.split("=");
    if (
      k.trim().toLowerCase() === "charset" && v.trim().replace(/"/g, "").toLowerCase() !== "utf-8"
    ) {
      return unsupported(`charset ${v.trim().slice(0, 40)} is not accepted: bodies are UTF-8`);
    }
  }
  return undefined;
}

function unsupported(message: string): ServiceError {
  return new ServiceError("UNSUPPORTED_MEDIA_TYPE", message);
}

/** CORS headers of an answer to an allowed cross-origin page (none otherwise). */
export function corsHeaders(header: HeaderOf, p: BrowserPolicy): Record<string, string> {
  const origin = header("origin");
  if (!origin || p.allowedOrigins.length === 0) return {};
  const host = header("host") ?? undefined;
  if (!originAllowed(origin, host, p)) return {};
  try {
    if (host !== undefined && new URL(origin).host === host.toLowerCase()) return {}; // same origin
  } catch {
    // not a URL origin: answered below only under `*`
  }
  return {
    "access-control-allow-origin": p.allowedOrigins.includes("*") ? "*" : origin,
    "access-control-expose-headers": EXPOSE_HEADERS,
    vary: "Origin",
  };
}

/**
 * The answer to a CORS preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`):
 * 204 with the grants for an allowed origin, a 403 error otherwise; undefined for any other
 * request.
 */
export function preflightAnswer(
  method: string,
  header: HeaderOf,
  p: BrowserPolicy,
): { status: 204; headers: Record<string, string> } | ServiceError | undefined {
  if (method !== "OPTIONS" || !header("origin") || !header("access-control-request-method")) {
    return undefined;
  }
  const cors = corsHeaders(header, p);
  if (!cors["access-control-allow-origin"]) {
    return new ServiceError(
      "FORBIDDEN",
      "cross-origin requests are not allowed from this origin (SVC_CORS_ORIGINS)",
    );
  }
  return {
    status: 204,
    headers: {
      ...cors,
      "access-control-allow-methods": "GET, POST, OPTIONS",
      "access-control-allow-headers": ALLOW_HEADERS,
      "access-control-max-age": "600",
    },
  };
}
