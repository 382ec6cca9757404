/** Decoding of untrusted JSON: strict UTF-8, structural pre-check, then JSON.parse. */

import { invalidInput } from "../errors.ts";
import { type ScanBounds, scanJson } from "./json_scan.ts";

const utf8 = new TextDecoder("utf-8");
const utf8Strict = new TextDecoder("utf-8", { fatal: true });

/**
 * UTF-8 text of the body, refusing invalid bytes. The strict decoder is ~7× slower here, so it
 * only runs when the lenient one produced a U+FFFD (invalid bytes, or a genuine U+FFFD).
 */
function decodeUtf8(bytes: Uint8Array): string {
  const text = utf8.decode(bytes);
  if (text.indexOf("\uFFFD") >= 0) {
    try {
      utf8Strict.decode(bytes);
    } catch {
      throw invalidInput("request body is not valid UTF-8");
    }
  }
  return text;
}

/** Decode a JSON request body; every failure is INVALID_INPUT with the parser's reason. */
export function decodeJson(bytes: Uint8Array, bounds: ScanBounds): unknown {
  const text = decodeUtf8(bytes);
  // JSON.parse must never see a body nested deep enough, or with values or keys enough, to matter.
  scanJson(text, bounds);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw invalidInput(`malformed JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}
