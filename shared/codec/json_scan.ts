/** Nesting-depth check of untrusted JSON bytes, before JSON.parse sees them. */

import { invalidInput } from "../errors.ts";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Throw INVALID_INPUT when brackets nest deeper than `maxDepth`. Works on raw UTF-8 bytes (every
 * byte of a multi-byte character is ≥ 0x80, so it never looks like a bracket or quote) and jumps
 * over string contents with the native `indexOf`, which keeps text-heavy bodies cheap.
 */
export function checkJsonDepth(bytes: Uint8Array, maxDepth: number): void {
  let depth = 0;
  const n = bytes.length;
  for (let i = 0; i < n; i++) {
    const c = bytes[i];
    if (c === QUOTE) {
      i = closingQuote(bytes, i + 1);
      if (i < 0) return; // unterminated string: JSON.parse reports it
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) {
        throw invalidInput(
          `request nesting exceeds the limit of ${maxDepth} levels (SVC_MAX_NESTING_DEPTH)`,
        );
      }
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
}

/** Index of the quote closing a string that starts at `from`, or -1. */
function closingQuote(bytes: Uint8Array, from: number): number {
  for (let j = bytes.indexOf(QUOTE, from); j >= 0; j = bytes.indexOf(QUOTE, j + 1)) {
    let slashes = 0;
    for (let k = j - 1; k >= from && bytes[k] === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return j; // an even run of backslashes escapes only itself
  }
  return -1;
}
