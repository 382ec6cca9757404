/**
 * `options.lora_id`: a model-hub repository id (`owner/name`) and nothing else. It becomes part of
 * hub URLs and cache paths, so anything that could be a URL, a path or a header trick is refused
 * by name before any fetch.
 */
import { invalidInput } from "@svc/shared/errors";

/** Longest accepted id (the hub's own limit: 96 characters per part). */
export const MAX_LORA_ID_LENGTH = 96 * 2 + 1;

const PART_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$/;

/** The reason `value` is not an acceptable adapter id, or undefined when it is one. */
export function loraIdProblem(value: unknown): string | undefined {
  if (typeof value !== "string") return "must be a string";
  if (value.length === 0) return "must not be empty";
  if (value.length > MAX_LORA_ID_LENGTH) {
    return `is ${value.length} characters long (at most ${MAX_LORA_ID_LENGTH})`;
  }
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) return "contains control characters";
  if (value.includes("://") || /^[A-Za-z][A-Za-z0-9+.-]*:/.test(value)) {
    return "looks like a URL; give the hub repository id ('owner/name') instead";
  }
  if (value.includes("\\") || value.startsWith("/") || value.startsWith("~")) {
    return "looks like a file path; give the hub repository id ('owner/name') instead";
  }
  if (value.split("/").some((p) => p === ".." || p === ".") || value.includes("..")) {
    return "must not contain '..' or '.' parts";
  }
  const parts = value.split("/");
  if (parts.length !== 2) return "must have exactly one '/' ('owner/name')";
  if (!parts.every((p) => PART_RE.test(p))) {
    return "parts must start with a letter or digit and hold only letters, digits, '_', '.', '-'";
  }
  return undefined;
}

/** `value` as an adapter id, or a 400 INVALID_INPUT saying why it is not one. */
export function checkLoraId(value: unknown): string {
  const problem = loraIdProblem(value);
  if (problem !== undefined) {
    throw invalidInput(
      `options.lora_id ${problem}: it names a LoRA adapter by its model-hub repository id ` +
        "like 'owner/name'",
    );
  }
  return value as string;
}
