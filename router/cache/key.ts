/**
 * The result cache's key: a SHA-256 over everything that selects an answer. The tenant (the API
 * key as presented, so one tenant never meets another's answers, nor the timing of another's
 * hits), the pool, the method, path and query (route and model), the body's media type and the
 * `Accept` header (the answer's format), and the body's bytes exactly as they arrived.
 *
 * The body is not normalised: equal bytes give an equal answer, which is all the key must
 * guarantee. A canonical JSON form would cost a parse on a path that otherwise never parses a
 * body, and two bodies that differ only in spacing or key order are rarer than repeats by the
 * same client code, which sends the same bytes. The model's revision is not in the key: each entry
 * carries the revision that computed it, checked against the fleet at every hit (cached.ts).
 *
 * The digest is a cryptographic one because a collision would hand one request the answer of
 * another, possibly another tenant's; it costs about 1.2 µs for a small request here.
 */
import { createHash } from "node:crypto";
import type { BodyChunks } from "@svc/shared/http/read_body";

/** What, besides the body, selects an answer. */
export interface KeyParts {
  /** The credential as presented (`""` when the router has no API keys: one tenant). */
  tenant: string;
  pool: string;
  method: string;
  /** Path and query as received. */
  path: string;
  contentType: string;
  accept: string;
}

/**
 * The key of a request: the SHA-256 (hex) of its parts, each length-prefixed so that none can
 * bleed into the next, and of its body, chunk by chunk (no joined copy).
 */
export function resultKey(parts: KeyParts, body: BodyChunks | null): string {
  const h = createHash("sha256");
  // One update for the parts: each call into the hash costs more than the bytes it adds.
  h.update(
    field(parts.tenant) + field(parts.pool) + field(parts.method) + field(parts.path) +
      field(parts.contentType) + field(parts.accept) + `${body?.length ?? 0}:`,
  );
  if (body) {
    for (const chunk of body.chunks) h.update(chunk);
  }
  return h.digest("hex");
}

function field(value: string): string {
  return `${value.length}:${value};`;
}
