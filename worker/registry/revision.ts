/**
 * The revision of a loaded model: a digest of everything its answers depend on, announced to the
 * router (fleet status) and sent with every answer (`X-SVC-Model-Revision`), so the router's
 * result cache can never serve an answer of other weights. It covers the release (code that
 * shapes answers), the catalog entry as this worker runs it (pooling, prompts, item cap...), the
 * weights file the unit runs, and the content of every file the model loads (SHA-256 of the
 * bytes). Content, not file stamps or the hub revision: catalog entries follow a branch
 * (`main`), so the same name may hold other bytes tomorrow, while two machines that downloaded
 * the same bytes at different times must agree (a pool shares one cache), and a restart with the
 * same files must find its old answers still valid.
 *
 * Hashing reads each file once per load (about 1 GB/s here, beside the session being built); a
 * file whose size and modification time have not changed since it was hashed in this process is
 * not read again (models evicted and loaded again).
 */
import { createHash } from "node:crypto";
import { VERSION } from "@svc/shared/version";
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { fileStamp } from "../weights/local_cache.ts";

/** Length of an announced revision (hex digits of SHA-256: 128 bits). */
const REVISION_HEX = 32;

/** Bytes read per step while hashing a file. */
const READ_BYTES = 1 << 20;

/** Files whose digests are remembered (a worker loads few models; the oldest are forgotten). */
const MAX_REMEMBERED = 256;

/** Computes revisions, remembering file digests by path and stamp. */
export class RevisionHasher {
  readonly #digests = new Map<string, { stamp: string; hex: string }>();

  /**
   * The revision of a unit running `modelFile` of `config` from the local `files` (role → path).
   * Rejects when a file cannot be read (the caller then announces no revision).
   */
  async revisionOf(
    config: ModelConfig,
    modelFile: string,
    files: Readonly<Record<string, string>>,
  ): Promise<string> {
    const roles = Object.keys(files).sort();
    const digests = await Promise.all(roles.map((role) => this.#fileDigest(files[role])));
    const h = createHash("sha256");
    h.update(`release ${VERSION}\n`);
    h.update(`config ${JSON.stringify(config)}\n`);
    h.update(`model_file ${modelFile}\n`);
    roles.forEach((role, i) => h.update(`file ${role} ${digests[i]}\n`));
    return h.digest("hex").slice(0, REVISION_HEX);
  }

  async #fileDigest(path: string): Promise<string> {
    const stamp = await fileStamp(path);
    if (stamp === "absent") throw new Error(`model file missing: ${path}`);
    const known = this.#digests.get(path);
    if (known?.stamp === stamp) return known.hex;
    const hex = await sha256OfFile(path);
    // The file may have been replaced while it was read: keep the digest only if it was not.
    if (await fileStamp(path) === stamp) {
      this.#digests.delete(path);
      if (this.#digests.size >= MAX_REMEMBERED) {
        this.#digests.delete(this.#digests.keys().next().value!);
      }
      this.#digests.set(path, { stamp, hex });
    }
    return hex;
  }
}

/** SHA-256 of a file's bytes (hex), read in steps. */
async function sha256OfFile(path: string): Promise<string> {
  const h = createHash("sha256");
  using file = await Deno.open(path, { read: true });
  const buf = new Uint8Array(READ_BYTES);
  for (;;) {
    const n = await file.read(buf);
    if (n === null) break;
    h.update(buf.subarray(0, n));
  }
  return h.digest("hex");
}
