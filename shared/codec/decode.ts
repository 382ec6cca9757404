/** Request decoding: bytes + Content-Type → a plain value that respects every input limit. */

import { invalidInput } from "../errors.ts";
import { decodeJson } from "./json_decode.ts";
import { DEFAULT_LIMITS, type InputLimits } from "./limits.ts";
import { enforceLimits } from "./limits_check.ts";
import { decodeMsgpack } from "./msgpack_decode.ts";
import { scanMsgpack } from "./msgpack_scan.ts";

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
 * Enforces `limits` (size, depth, values, keys per object, list and string lengths); every
 * failure is INVALID_INPUT.
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
  const value = msgpack ? decodeMsgpack(bytes, limits) : decodeJson(bytes, limits);
  const replacement = enforceLimits(value, limits);
  // msgpackr turns invalid UTF-8 into U+FFFD; only then are the strings checked strictly (JSON
  // text was already decoded strictly when it held one).
  if (msgpack && replacement) scanMsgpack(bytes, limits, true);
  return value;
}

function bodyTooLarge(size: number, limits: Pick<InputLimits, "maxBodyBytes">) {
  return invalidInput(
    `request body of ${size} bytes exceeds the limit of ${limits.maxBodyBytes} bytes ` +
      `(SVC_MAX_BODY_BYTES)`,
  );
}

// Bodies are read by shared/http; decoding callers have long imported the reader from here.
export { readBodyLimited } from "../http/read_body.ts";
