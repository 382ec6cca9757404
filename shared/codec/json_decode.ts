/** Decoding of untrusted JSON: strict UTF-8, depth pre-check, then JSON.parse. */

import { invalidInput } from "../errors.ts";
import { checkJsonDepth } from "./json_scan.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Decode a JSON request body; every failure is INVALID_INPUT with the parser's reason. */
export function decodeJson(bytes: Uint8Array, maxDepth: number): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw invalidInput("request body is not valid UTF-8");
  }
  checkJsonDepth(text, maxDepth); // JSON.parse must never see a body nested deep enough to matter
  try {
    return JSON.parse(text);
  } catch (err) {
    throw invalidInput(`malformed JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}
