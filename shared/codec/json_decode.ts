/** Decoding of untrusted JSON: depth pre-check, strict UTF-8, then JSON.parse. */

import { invalidInput } from "../errors.ts";
import { checkJsonDepth } from "./json_scan.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Decode a JSON request body; every failure is INVALID_INPUT with the parser's reason. */
export function decodeJson(bytes: Uint8Array, maxDepth: number): unknown {
  checkJsonDepth(bytes, maxDepth);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw invalidInput("request body is not valid UTF-8");
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw invalidInput(`malformed JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}
