/**
 * What a relayed request and its answer look like in Deno KV: a head (JSON-like value, validated
 * when read back: another process wrote it) and the body cut into chunks that each fit one KV
 * value (64 KiB), written in atomic commits of at most {@link COMMIT_BYTES} (KV's limit is
 * 800 KiB per commit).
 */
import { z } from "zod";
import { HeaderNames as H } from "@svc/shared/headers";
import { joinChunks } from "../../proxy/join_chunks.ts";

/** Most body bytes in one stored chunk (KV's value limit is 65,536 bytes after serialisation). */
export const CHUNK_BYTES = 60_000;

/** Most chunk bytes in one atomic commit, leaving room for a head (KV allows 819,200). */
export const COMMIT_BYTES = 12 * CHUNK_BYTES;

/** Most headers a relayed head carries (the API defines about a dozen in each direction). */
const MAX_HEADERS = 32;

/** A request as the asker stores it for the holder (no credentials: the holder adds the worker's). */
export interface RelayRequestHead {
  /** Router instance that asked (for logs). */
  asker: string;
  worker_id: string;
  method: string;
  /** Path and query, as sent to a worker. */
  path: string;
  /** Allow-listed request headers (router/proxy/headers.ts), without `authorization`. */
  headers: Record<string, string>;
  body_bytes: number;
  body_chunks: number;
  /** Epoch ms after which nobody waits for the answer: the holder drops the request unserved. */
  deadline: number;
}

/** What became of a relayed request at the holder. */
export type RelayAnswerHead =
  /** The worker answered: status, the answer headers a client may see, body in chunks. */
  | {
    kind: "answer";
    status: number;
    headers: [string, string][];
    body_bytes: number;
    body_chunks: number;
  }
  /** The worker never had the request whole (the holder no longer holds its connection). */
  | { kind: "not_delivered"; error: string }
  /** The worker received it whole and dropped its connection without answering. */
  | { kind: "dropped"; error: string }
  /** The answer is larger than the relay carries (`SVC_RELAY_MAX_BODY_BYTES`). */
  | { kind: "too_large"; body_bytes: number }
  /** The holder gave up at the deadline (the asker's own timer has answered by then). */
  | { kind: "timeout" };

const Count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
/** A body's size (the relay's bound is at most 64 MiB) and its chunk count, which must agree. */
const BodyBytes = z.number().int().nonnegative().max(64 * 1024 * 1024);
const agree = (h: { body_bytes: number; body_chunks: number }) =>
  h.body_chunks === chunkCount(h.body_bytes);
const HeaderMap = z.record(z.string().max(256), z.string().max(8192));
const ErrorText = z.string().max(512);

const RequestHeadSchema: z.ZodType<RelayRequestHead> = z.object({
  asker: z.string().min(1).max(128),
  worker_id: z.string().min(1).max(256),
  method: z.string().regex(/^[A-Z]{1,16}$/),
  // API routes only: the holder sends it with the worker's own credential.
  path: z.string().regex(/^\/v[12]\//).max(16_384),
  headers: HeaderMap.refine((h) => Object.keys(h).length <= MAX_HEADERS, "too many headers"),
  body_bytes: BodyBytes,
  body_chunks: Count,
  deadline: Count,
}).refine(agree, "body_chunks does not match body_bytes");

const AnswerHeadSchema: z.ZodType<RelayAnswerHead> = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("answer"),
    status: z.number().int().min(200).max(599),
    headers: z.array(z.tuple([z.string().max(256), z.string().max(8192)])).max(MAX_HEADERS),
    body_bytes: BodyBytes,
    body_chunks: Count,
  }).refine(agree, "body_chunks does not match body_bytes"),
  z.object({ kind: z.literal("not_delivered"), error: ErrorText }),
  z.object({ kind: z.literal("dropped"), error: ErrorText }),
  z.object({ kind: z.literal("too_large"), body_bytes: Count }),
  z.object({ kind: z.literal("timeout") }),
]);

/** The request head in `value`, or undefined when it is not one. */
export function parseRequestHead(value: unknown): RelayRequestHead | undefined {
  const r = RequestHeadSchema.safeParse(value);
  return r.success ? r.data : undefined;
}

/** The answer head in `value`, or undefined when it is not one. */
export function parseAnswerHead(value: unknown): RelayAnswerHead | undefined {
  const r = AnswerHeadSchema.safeParse(value);
  return r.success ? r.data : undefined;
}

/** Request headers a relayed request may carry to a worker (router/proxy/headers.ts's list). */
const RELAYED_REQUEST_HEADERS: ReadonlySet<string> = new Set([
  "content-type",
  "accept",
  "accept-encoding",
  "content-length",
  H.traceId.toLowerCase(),
]);

/**
 * The headers of a stored request that reach the worker: the allow-list again (the value was read
 * from shared storage), so a client credential can never travel through KV to a worker.
 */
export function relayedHeaders(stored: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(stored)) {
    const name = k.toLowerCase();
    if (RELAYED_REQUEST_HEADERS.has(name)) out[name] = v;
  }
  return out;
}

/**
 * `parts` (a body as it arrived, in pieces of any size) re-cut into {@link chunkCount} pieces of
 * {@link CHUNK_BYTES}, the last one shorter: as few KV values as the size allows.
 */
export function splitBody(parts: readonly Uint8Array[]): Uint8Array[] {
  const size = parts.reduce((n, p) => n + p.length, 0);
  const whole = joinChunks(parts, size);
  const out: Uint8Array[] = [];
  for (let at = 0; at < size; at += CHUNK_BYTES) {
    out.push(whole.subarray(at, Math.min(size, at + CHUNK_BYTES)));
  }
  return out;
}

/** How many chunks a body of `bytes` bytes is stored in. */
export function chunkCount(bytes: number): number {
  return Math.ceil(bytes / CHUNK_BYTES);
}

/** Indexes of `chunks` grouped into commits of at most {@link COMMIT_BYTES} each, in order. */
export function commitGroups(chunks: readonly Uint8Array[]): number[][] {
  const groups: number[][] = [];
  let cur: number[] = [];
  let bytes = 0;
  chunks.forEach((c, i) => {
    if (cur.length > 0 && bytes + c.length > COMMIT_BYTES) {
      groups.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(i);
    bytes += c.length;
  });
  if (cur.length > 0) groups.push(cur);
  return groups;
}
