/**
 * Per-worker credentials, derived from the fleet's worker secret (`SVC_WORKER_API_KEY`), which the
 * router and the real workers hold and which never crosses the wire:
 *
 * - the **request key** of worker `id`: what the router sends to that worker
 *   (`Authorization: Bearer <key>`). A worker accepts its own key (and the secret itself, for
 *   operators), so the key a machine receives opens that machine only.
 * - the **id proof** of worker `id`: sent in the register frame. The router registers a worker
 *   under the id it asks for only with a valid proof, so holding the worker token is not enough
 *   to take a real worker's id (and with it, its request key), even right after a router restart.
 *
 * Both are HMAC-SHA-256 of the worker id under the secret, with distinct labels so that one can
 * never stand for the other.
 */

const REQUEST_LABEL = "svc/worker-request-key/v1\n";
const ID_LABEL = "svc/worker-id-proof/v1\n";
/** Prefix of request keys (tells them from the secret itself in logs and docs). */
export const REQUEST_KEY_PREFIX = "svcw1.";
/** An id proof: 64 lower-case hex characters. */
export const ID_PROOF_RE = /^[0-9a-f]{64}$/;

const encoder = new TextEncoder();

/** Derivations under one worker secret (the HMAC key is imported once). */
export class WorkerKeys {
  readonly #key: Promise<CryptoKey>;

  constructor(secret: string) {
    this.#key = crypto.subtle.importKey(
      "raw",
      encoder.encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
  }

  async #mac(label: string, workerId: string): Promise<Uint8Array> {
    const sig = await crypto.subtle.sign("HMAC", await this.#key, encoder.encode(label + workerId));
    return new Uint8Array(sig);
  }

  /** The bearer key the router sends to worker `workerId`. */
  async requestKey(workerId: string): Promise<string> {
    return REQUEST_KEY_PREFIX + base64Url(await this.#mac(REQUEST_LABEL, workerId));
  }

  /** The proof that a registration of `workerId` comes from a holder of the secret. */
  async idProof(workerId: string): Promise<string> {
    return hex(await this.#mac(ID_LABEL, workerId));
  }
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function base64Url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}
