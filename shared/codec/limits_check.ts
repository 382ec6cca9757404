/** Enforcement of the list-length and string-length limits on a decoded request body. */

import { invalidInput } from "../errors.ts";
import type { InputLimits } from "./limits.ts";
import { isNdArray } from "./ndarray.ts";

/** A step of the path to a value, kept as a linked list so that no string is built unless needed. */
interface PathNode {
  readonly parent: PathNode | undefined;
  readonly key: string | number;
}

/** `items[2].images[0].data` style rendering of a path. */
export function formatPath(path: readonly (string | number | symbol)[]): string {
  let out = "";
  for (const k of path) {
    out += typeof k === "number" ? `[${k}]` : out === "" ? String(k) : `.${String(k)}`;
  }
  return out || "(body)";
}

function render(node: PathNode | undefined, last?: string | number): string {
  const keys: (string | number)[] = last === undefined ? [] : [last];
  for (let n = node; n; n = n.parent) keys.push(n.key);
  return formatPath(keys.reverse());
}

function allNumbers(a: unknown[]): boolean {
  for (let i = 0; i < a.length; i++) if (typeof a[i] !== "number") return false;
  return true;
}

/**
 * Check every list and string of a decoded body against the limits, iteratively (no recursion).
 * Lists made only of numbers (token ids) are exempt from `maxItems`; image `data` given as base64
 * in JSON, and `data:` URIs in an `images` list (Cohere's embed), are exempt from
 * `maxStringLength` (both are bounded by the body size). Running this before
 * schema validation also keeps validation cost, and the number of reported issues, bounded.
 * Returns true when a string (or key) holds U+FFFD, the decoder's mark for invalid UTF-8: a
 * msgpack body is then checked strictly (a genuine U+FFFD is allowed).
 */
export function enforceLimits(root: unknown, limits: InputLimits): boolean {
  const { maxItems, maxStringLength } = limits;
  let replacement = false;
  const seen = (s: string) => {
    if (!replacement && s.indexOf("\uFFFD") >= 0) replacement = true;
  };
  const tooLong = (s: string, node: PathNode | undefined, key: string | number, what: string) =>
    invalidInput(
      `${render(node, key)}: ${what} of ${s.length} characters exceeds the limit of ` +
        `${maxStringLength} (SVC_MAX_STRING_LENGTH)`,
    );
  if (typeof root === "string") {
    if (root.length > maxStringLength) throw tooLong(root, undefined, "(body)", "string");
    seen(root);
  }
  const stack: { value: object; path: PathNode | undefined }[] = [];
  if (typeof root === "object" && root !== null) stack.push({ value: root, path: undefined });
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (Array.isArray(value)) {
      if (value.length > maxItems && !allNumbers(value)) {
        throw invalidInput(
          `${render(path)}: list of ${value.length} elements exceeds the limit of ${maxItems} ` +
            `(SVC_MAX_ITEMS)`,
        );
      }
      // Cohere's embed sends images as data URIs in a top-level `images` list.
      const imageUris = path?.key === "images";
      for (let i = 0; i < value.length; i++) {
        const v: unknown = value[i];
        if (typeof v === "string") {
          if (v.length > maxStringLength && !(imageUris && v.startsWith("data:"))) {
            throw tooLong(v, path, i, "string");
          }
          seen(v);
        } else if (typeof v === "object" && v !== null && !ArrayBuffer.isView(v) && !isNdArray(v)) {
          stack.push({ value: v, path: { parent: path, key: i } });
        }
      }
      continue;
    }
    // Base64 image bytes live at images[i].data: this node's key is i and its parent's is "images".
    const inImage = path?.parent?.key === "images";
    for (const k of Object.keys(value)) {
      if (k.length > maxStringLength) throw tooLong(k, path, k.slice(0, 40), "key");
      seen(k);
      const v: unknown = (value as Record<string, unknown>)[k];
      if (typeof v === "string") {
        if (v.length > maxStringLength && !(inImage && k === "data")) {
          throw tooLong(v, path, k, "string");
        }
        seen(v);
      } else if (typeof v === "object" && v !== null && !ArrayBuffer.isView(v) && !isNdArray(v)) {
        stack.push({ value: v, path: { parent: path, key: k } });
      }
    }
  }
  return replacement;
}
