/** Schema validation of decoded requests, with error messages that name the field. */

import type { z } from "zod";
import { invalidInput } from "../errors.ts";
import { decodeBody } from "./decode.ts";
import { DEFAULT_LIMITS, type InputLimits } from "./limits.ts";
import { formatPath } from "./limits_check.ts";

/** How many issues one error message lists; the rest are counted. */
const MAX_REPORTED = 3;

/** Say "missing" rather than zod's "expected string, received undefined" for absent fields. */
const errorMap = (iss: { code: string; input?: unknown }): string | undefined =>
  iss.code === "invalid_type" && iss.input === undefined ? "required field is missing" : undefined;

/** Render zod issues as `path: reason; path: reason (and N more)`. */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  const parts = issues.slice(0, MAX_REPORTED).map((i) => `${formatPath(i.path)}: ${i.message}`);
  const more = issues.length > MAX_REPORTED ? ` (and ${issues.length - MAX_REPORTED} more)` : "";
  return parts.join("; ") + more;
}

/** Validate a decoded value against `schema`; throws INVALID_INPUT naming the wrong field(s). */
export function parseRequest<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  // Plain first: a custom error map turns off zod's compiled fast path (measured 5× slower).
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  // Errors are rare: parse again with the error map for friendlier messages.
  const detailed = schema.safeParse(value, { error: errorMap });
  throw invalidInput(formatIssues((detailed.success ? r : detailed).error.issues));
}

/** decodeBody + parseRequest in one call: bytes to a typed, validated request. */
export function decodeRequest<S extends z.ZodType>(
  schema: S,
  bytes: Uint8Array,
  contentType: string | null,
  limits: InputLimits = DEFAULT_LIMITS,
): z.output<S> {
  return parseRequest(schema, decodeBody(bytes, contentType, limits));
}
