/**
 * Who may do what on the router. Two rights, each decided by one function:
 *
 * - **client** (`clientRights`): the API. Open when `SVC_API_KEYS` is unset; else a client key
 *   (or an admin key) is needed.
 * - **admin** (`adminRights`): operator actions (drain) and fleet detail (worker ids and URLs,
 *   `/health` in full, `/metrics`, `/ws/cluster-status`). An admin key (`SVC_ADMIN_KEYS`) is
 *   needed; a client key is refused with 403. Without admin keys, only a local stack grants it:
 *   a router listening on loopback, asked from this machine (no proxy in between).
 *
 * `SVC_STATUS_PUBLIC` opens fleet detail (never admin actions) to everyone (`fleetDetailRights`,
 * `statusRights`).
 */
import { ServiceError } from "@svc/shared/errors";
import type { SecretSet } from "@svc/shared/http/secrets";
import { presentedAuthorization } from "@svc/shared/http/ws_auth";
import { classifyHost } from "../fleet/addresses.ts";

/** The router's access settings. */
export interface AccessPolicy {
  /** `SVC_API_KEYS` (empty: the API is open). */
  apiKeys: SecretSet;
  /** `SVC_ADMIN_KEYS` (empty: admin rights only on a local stack). */
  adminKeys: SecretSet;
  /** The router listens on loopback only. */
  localStack: boolean;
  /** `SVC_STATUS_PUBLIC`: fleet detail open to everyone. */
  statusPublic: boolean;
}

/** What a decision reads of a request. */
export interface AccessRequest {
  /**
   * The `Authorization` the request presents: its header, or on a WebSocket upgrade a
   * `svc.bearer.<base64url key>` subprotocol (a browser's socket cannot send the header).
   */
  authorization: string | undefined;
  /** The peer's address (undefined when the server does not say). */
  peer: string | undefined;
  /** The request names another client (`Forwarded`, `X-Forwarded-For`, `X-Real-IP`). */
  forwarded: boolean;
}

/** A decision: allowed, or the error to answer. */
export type AccessVerdict = { ok: true } | { ok: false; error: ServiceError };

const OK: AccessVerdict = { ok: true };

/** The parts of `req` decisions read. */
export function accessRequestOf(req: Request, peer: string | undefined): AccessRequest {
  const h = req.headers;
  return {
    authorization: presentedAuthorization(h),
    peer,
    forwarded: h.has("forwarded") || h.has("x-forwarded-for") || h.has("x-real-ip"),
  };
}

/** May this request use the API? */
export async function clientRights(
  policy: AccessPolicy,
  req: AccessRequest,
): Promise<AccessVerdict> {
  if (policy.apiKeys.empty) return OK;
  const { authorization } = req;
  if (await policy.apiKeys.admits(authorization) || await policy.adminKeys.admits(authorization)) {
    return OK;
  }
  return {
    ok: false,
    error: new ServiceError("UNAUTHORIZED", "a valid API key is required (Authorization: Bearer)"),
  };
}

/** May this request act as an operator (drain) and see fleet detail? */
export async function adminRights(
  policy: AccessPolicy,
  req: AccessRequest,
): Promise<AccessVerdict> {
  if (await policy.adminKeys.admits(req.authorization)) return OK;
  if (policy.adminKeys.empty && policy.localStack && !req.forwarded && isLoopbackPeer(req.peer)) {
    return OK;
  }
  if (await policy.apiKeys.admits(req.authorization)) {
    return {
      ok: false,
      error: new ServiceError(
        "FORBIDDEN",
        "a client API key is not an admin key: this needs a key of SVC_ADMIN_KEYS",
      ),
    };
  }
  if (policy.adminKeys.empty) {
    return {
      ok: false,
      error: new ServiceError(
        "FORBIDDEN",
        "admin actions and fleet detail need SVC_ADMIN_KEYS on the router (without it, only a " +
          "router listening on loopback grants them, to clients on the same machine)",
      ),
    };
  }
  return {
    ok: false,
    error: new ServiceError(
      "UNAUTHORIZED",
      "a valid admin key is required (Authorization: Bearer, SVC_ADMIN_KEYS)",
    ),
  };
}

/** May this request see fleet detail? Admin rights, or `SVC_STATUS_PUBLIC`. */
export function fleetDetailRights(
  policy: AccessPolicy,
  req: AccessRequest,
): Promise<AccessVerdict> {
  return policy.statusPublic ? Promise.resolve(OK) : adminRights(policy, req);
}

/** May this request read the status views of clients (`/health`, `/ws/status`)? */
export function statusRights(policy: AccessPolicy, req: AccessRequest): Promise<AccessVerdict> {
  return policy.statusPublic ? Promise.resolve(OK) : clientRights(policy, req);
}

/** True for a loopback peer address (IPv4-mapped forms included). */
function isLoopbackPeer(peer: string | undefined): boolean {
  if (!peer) return false;
  const bare = peer.replace(/^\[(.*)\]$/, "$1");
  return classifyHost(bare.includes(":") ? `[${bare}]` : bare).class === "loopback";
}
