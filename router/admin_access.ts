/**
 * Who may take operator actions (`/v1/admin/*`, e.g. `deno task drain`): the one place that
 * decides it, so that separate admin keys can slot in here.
 *
 * - With client keys (`SVC_API_KEYS`): a valid key, checked by the `/v1/*` key middleware before
 *   any admin route runs.
 * - Without keys: only a client on the router's own machine, i.e. from a loopback address and
 *   without proxy headers (a reverse proxy on the same host forwards strangers from loopback too,
 *   and says so in `Forwarded`/`X-Forwarded-For`/`X-Real-IP`). That is `npm start` with
 *   `deno task drain` in another terminal; an open router on the network refuses everyone else,
 *   since any client could take its workers out of service.
 */
import { ServiceError } from "@svc/shared/errors";
import type { SecretSet } from "@svc/shared/http/secrets";

/** Headers a reverse proxy adds: their presence means the peer address is not the client's. */
const PROXY_HEADERS = ["forwarded", "x-forwarded-for", "x-real-ip"] as const;

/** True for 127.0.0.0/8, ::1 and IPv4-mapped loopback (`::ffff:127.0.0.1`). */
export function isLoopback(hostname: string | undefined): boolean {
  if (!hostname) return false;
  const h = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "::1" || h === "0:0:0:0:0:0:0:1") return true;
  const v4 = h.startsWith("::ffff:") ? h.slice(7) : h;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** What the decision reads of a request. */
export interface AdminRequest {
  headers: Headers;
  /** The peer address as the server saw it (undefined when the server does not say). */
  remoteHostname: string | undefined;
}

/**
 * Undefined when the request may take admin actions, else the 401 to answer. `clientKeys`:
 * the router's `SVC_API_KEYS` (a request reaching an admin route with keys set has passed them).
 */
export function adminRefusal(clientKeys: SecretSet, req: AdminRequest): ServiceError | undefined {
  if (!clientKeys.empty) return undefined;
  const proxied = PROXY_HEADERS.some((h) => req.headers.has(h));
  if (isLoopback(req.remoteHostname) && !proxied) return undefined;
  return new ServiceError(
    "UNAUTHORIZED",
    "admin actions on a router without SVC_API_KEYS are taken only from its own machine " +
      "(a loopback address, not through a proxy): run the command there, or set SVC_API_KEYS " +
      "on the router and pass one of its keys (--api-key)",
  );
}
