/**
 * Where a relayed request lives in Deno KV (docs/fleet.md, "A relay through KV"). Heads and body
 * chunks sit under separate prefixes, so a holder listing its inbox reads heads only, and a body
 * is listed in order by its chunk index.
 */

/** The keys of one fleet's relay (`prefix` is `SVC_KV_PREFIX`). */
export class RelayKeys {
  constructor(readonly prefix: string) {}

  /** Set by each request for `holder` (expiring): what it watches and polls (one small read). */
  bell(holder: string): Deno.KvKey {
    return [this.prefix, "relay", "bell", holder];
  }

  /** Prefix of the request heads waiting for `holder`. */
  inbox(holder: string): Deno.KvKey {
    return [this.prefix, "relay", "inbox", holder];
  }

  /** The head of request `id` for `holder`: deleting it (checked) is how either side claims it. */
  request(holder: string, id: string): Deno.KvKey {
    return [this.prefix, "relay", "inbox", holder, id];
  }

  /** Prefix of request `id`'s body chunks (index appended). */
  requestBody(id: string): Deno.KvKey {
    return [this.prefix, "relay", "req", id];
  }

  /** The answer head of request `id`, which the asker watches. */
  answer(id: string): Deno.KvKey {
    return [this.prefix, "relay", "answer", id];
  }

  /**
   * Kept alive by the holder while it serves request `id` (renewed each pickup bound, expiring
   * after three): the asker's proof that the holder is still at it.
   */
  busy(id: string): Deno.KvKey {
    return [this.prefix, "relay", "busy", id];
  }

  /** Set by the asker when its client left after the holder claimed request `id`. */
  cancel(id: string): Deno.KvKey {
    return [this.prefix, "relay", "cancel", id];
  }

  /** Prefix of the answer's body chunks (index appended). */
  answerBody(id: string): Deno.KvKey {
    return [this.prefix, "relay", "ans", id];
  }
}
