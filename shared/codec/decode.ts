/** Request decoding: bytes + Content-Type → a plain value that respects every input limit. */

import { invalidInput } from "../errors.ts";
import { decodeJson } from "./json_decode.ts";
import { DEFAULT_LIMITS, type InputLimits, valueBudget } from "./limits.ts";
import { enforceLimits } from "./limits_check.ts";
import { decodeMsgpack } from "./msgpack_decode.ts";

/** True for `application/msgpack` and `application/x-msgpack` (parameters and case ignored). */
export function isMsgpackContentType(contentType: string | null | undefined): boolean {
  if (!contentType) return false;
  const base = contentType.split(";", 1)[0].trim().toLowerCase();
  return base === "application/msgpack" || base === "application/x-msgpack";
}

/**
 * Without a Content-Type, a body starting with a msgpack map header (never a valid JSON start) is
 * read as msgpack: some clients forget the header, and guessing cannot hurt a JSON body.
 */
function looksLikeMsgpackMap(bytes: Uint8Array): boolean {
  const b = bytes[0];
  return (b >= 0x80 && b <= 0x8f) || b === 0xde || b === 0xdf;
}

/**
 * Decode a request body: msgpack for `application/msgpack`/`application/x-msgpack`, else JSON.
 * Enforces `limits` (size, depth, value count, list and string lengths); every failure is
 * INVALID_INPUT.
 */
export function decodeBody(
  bytes: Uint8Array,
  contentType: string | null,
  limits: InputLimits = DEFAULT_LIMITS,
): unknown {
  if (bytes.length > limits.maxBodyBytes) throw bodyTooLarge(bytes.length, limits);
  if (bytes.length === 0) throw invalidInput("request body is empty");
  const msgpack = isMsgpackContentType(contentType) ||
    (!contentType && looksLikeMsgpackMap(bytes));
  const budget = valueBudget(limits);
  const value = msgpack
    ? decodeMsgpack(bytes, limits.maxDepth, budget)
    : decodeJson(bytes, limits.maxDepth, budget);
  enforceLimits(value, limits);
  return value;
}

function bodyTooLarge(size: number | string, limits: Pick<InputLimits, "maxBodyBytes">) {
  return invalidInput(
    `request body of ${size} bytes exceeds the limit of ${limits.maxBodyBytes} bytes ` +
      `(SVC_MAX_BODY_BYTES)`,
  );
}

/**
 * Read a request's body without ever holding more than `maxBodyBytes`: a declared Content-Length
 * over the limit fails at once, and a streamed body is cut off as soon as it passes the limit.
 * Worker and router both read bodies through here.
 */
export async function readBodyLimited(
  req: Request,
  limits: Pick<InputLimits, "maxBodyBytes"> = DEFAULT_LIMITS,
): Promise<Uint8Array<ArrayBuffer>> {
  const header = req.headers.get("content-length");
  const declared = Number(header ?? NaN);
  if (declared > limits.maxBodyBytes) throw bodyTooLarge(declared, limits);
  if (!req.body) return new Uint8Array(0);
  // A declared length within the bound: the native whole-body read is the fast path (the reader
  // loop costs more than the rest of routing), and Deno's server enforces the declared length.
  if (header !== null && /^\d+$/.test(header)) return new Uint8Array(await req.arrayBuffer());
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let total = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limits.maxBodyBytes) {
      await reader.cancel().catch(() => {});
      throw bodyTooLarge(`more than ${limits.maxBodyBytes}`, limits);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
