/**
 * Every reason the router closes a worker socket, in one table: the code of the `error` frame the
 * worker reads, the WebSocket close code, and the `svc_router_worker_connections_total` result
 * it is counted under (none for refusals that are not a connection outcome of their own).
 */
import { CLOSE_CODES, type FleetErrorCode } from "@svc/shared/fleet/protocol";

/** One way of closing a worker socket. */
export interface Refusal {
  /** `code` of the error frame sent before the close. */
  readonly code: FleetErrorCode;
  /** WebSocket close code. */
  readonly close: number;
  /** Result label of the connections counter, when the refusal is counted. */
  readonly metric?: string;
}

/** The refusals, by what caused them. */
export const REFUSALS = {
  /** No register frame within the registration timeout. */
  registrationTimeout: {
    code: "REGISTRATION_TIMEOUT",
    close: CLOSE_CODES.registrationTimeout,
    metric: "timeout",
  },
  /** More frames per second than SVC_WORKER_MAX_FRAMES_PER_S. */
  rateLimited: { code: "RATE_LIMITED", close: CLOSE_CODES.rateLimited, metric: "rate_limited" },
  /** A frame that is not valid JSON of the protocol's shape. */
  invalidFrame: { code: "INVALID_MESSAGE", close: CLOSE_CODES.invalidMessage, metric: "invalid" },
  /** A second register frame on a registered socket. */
  alreadyRegistered: { code: "INVALID_MESSAGE", close: CLOSE_CODES.invalidMessage },
  /** Status or drain before register. */
  notRegistered: { code: "NOT_REGISTERED", close: CLOSE_CODES.invalidMessage },
  /** Another fleet protocol version. */
  protocolMismatch: {
    code: "PROTOCOL_MISMATCH",
    close: CLOSE_CODES.protocolMismatch,
    metric: "protocol_mismatch",
  },
  /** An advertised URL the router will not send client requests to. */
  urlRefused: { code: "INVALID_MESSAGE", close: CLOSE_CODES.invalidMessage, metric: "invalid" },
  /** The worker id is held by a live connection of another process. */
  idInUse: { code: "ID_IN_USE", close: CLOSE_CODES.idInUse, metric: "id_in_use" },
  /** A newer connection of the same worker registered. */
  replaced: { code: "REPLACED", close: CLOSE_CODES.replaced },
  /** The fleet is at an aggregate cap (connections, models, frame bytes per second). */
  fleetFull: { code: "FLEET_FULL", close: CLOSE_CODES.fleetFull, metric: "fleet_full" },
  /** An id proof that does not match the worker id (not made with the fleet's worker secret). */
  badIdProof: { code: "BAD_ID_PROOF", close: CLOSE_CODES.badIdProof, metric: "bad_id_proof" },
} as const satisfies Record<string, Refusal>;

/** The name of a refusal in {@link REFUSALS}. */
export type RefusalKind = keyof typeof REFUSALS;
