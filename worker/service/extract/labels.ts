/** Labels are data: validated as text before any model reads them. */
import { invalidInput } from "@svc/shared/errors";
import { MAX_LABEL_LENGTH } from "./limits.ts";

// C0/C1 controls (newlines and tabs included) and lone surrogates: never part of a label.
const CONTROL_RE = /[\p{Cc}\p{Cs}]/u;

/**
 * Validate a list of labels (count, blank, control characters, length) and drop repeats;
 * undefined when the list is absent or empty. `field` names the list in error messages.
 */
export function checkLabelList(
  labels: readonly unknown[] | undefined,
  field: string,
  max: number,
): string[] | undefined {
  if (labels === undefined || labels.length === 0) return undefined;
  if (labels.length > max) {
    throw invalidInput(`${field} has ${labels.length} labels; at most ${max}`);
  }
  labels.forEach((l, i) => checkLabel(l, `${field}[${i}]`));
  return [...new Set(labels as string[])];
}

/** Validate one label-like text (a label, or a schema property's name or description). */
export function checkLabel(label: unknown, field: string, maxLength = MAX_LABEL_LENGTH): string {
  if (typeof label !== "string") throw invalidInput(`${field} must be a string`);
  if (label.trim().length === 0) throw invalidInput(`${field} is empty`);
  if (CONTROL_RE.test(label)) {
    throw invalidInput(`${field} contains a control character; labels are plain text`);
  }
  if (label.length > maxLength) {
    throw invalidInput(`${field} is longer than ${maxLength} characters`);
  }
  return label;
}
