/**
 * Which id a registering worker gets. With the fleet's worker secret (`SVC_WORKER_API_KEY`) the
 * router registers a worker under the id it asks for only when its id proof matches
 * (shared/fleet/worker_keys.ts); a registration without a proof gets an id the router makes up,
 * so a machine holding only the worker token can never stand for a real worker, not even in the
 * moments after a router restart before the real one reconnects. Without the secret, ids are
 * what workers claim (first come, bound to the live connection's instance key).
 */
import type { RegisterMessage } from "@svc/shared/fleet/protocol";
import type { WorkerKeys } from "@svc/shared/fleet/worker_keys";
import { timingSafeEqual } from "@svc/shared/http/secrets";

/** The outcome: the id to register under, or why the registration is refused. */
export type Identity =
  | {
    ok: true;
    id: string;
    /** How the id was decided. */
    basis: "proven" | "claimed" | "assigned";
  }
  | { ok: false; reason: string };

/** Prefix of ids the router assigns to registrations without an id proof. */
export const ASSIGNED_ID_PREFIX = "unverified-";

const encoder = new TextEncoder();

/** Decide the id of the registration `msg` (`keys`: the router's worker secret, if any). */
export async function identityOf(
  msg: RegisterMessage,
  keys: WorkerKeys | undefined,
): Promise<Identity> {
  if (!keys) return { ok: true, id: msg.worker_id, basis: "claimed" };
  if (msg.id_proof === undefined) {
    const random = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
    return { ok: true, id: ASSIGNED_ID_PREFIX + random, basis: "assigned" };
  }
  const expected = encoder.encode(await keys.idProof(msg.worker_id));
  if (!timingSafeEqual(expected, encoder.encode(msg.id_proof))) {
    return {
      ok: false,
      reason: `id proof does not match worker id ${msg.worker_id}: worker and router need the ` +
        "same SVC_WORKER_API_KEY",
    };
  }
  return { ok: true, id: msg.worker_id, basis: "proven" };
}
