/**
 * Secrets checked at the door: API keys and tokens. Comparisons are constant time: both sides are
 * hashed to 32 bytes first (so the length of the secret does not leak) and the digests are
 * compared without an early exit.
 */

const encoder = new TextEncoder();

/** SHA-256 of a string. */
async function sha256(s: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(s)));
}

/** Compare two byte arrays in time that depends only on their length. */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return m ? m[1] : undefined;
}

/** A set of accepted secrets, kept only as digests. */
export class SecretSet {
  readonly #digests: Uint8Array[];

  private constructor(digests: Uint8Array[]) {
    this.#digests = digests;
  }

  /** Hash the accepted secrets once, at start-up. */
  static async create(secrets: readonly string[]): Promise<SecretSet> {
    return new SecretSet(await Promise.all(secrets.map(sha256)));
  }

  /** True when no secret is configured. */
  get empty(): boolean {
    return this.#digests.length === 0;
  }

  /**
   * The bearer-key check: true when an `Authorization` value (`Bearer <key>`) presents one of
   * the secrets. Router and worker decide every API key with it.
   */
  admits(authorization: string | null | undefined): Promise<boolean> {
    return this.matches(bearerToken(authorization));
  }

  /** True when `presented` equals one of the secrets; every secret is compared every time. */
  async matches(presented: string | undefined): Promise<boolean> {
    if (presented === undefined || this.#digests.length === 0) return false;
    const d = await sha256(presented);
    let ok = false;
    for (const s of this.#digests) ok = timingSafeEqual(s, d) || ok;
    return ok;
  }
}
