/**
 * What detection found, setting by setting, with where each value came from (`file field`), and
 * the explicit settings (SVC_MODELS entry, override file) that win over the files.
 */
import type { DetectedSetting } from "@svc/shared/catalog/schema";
import { OVERRIDE_FILE } from "./errors.ts";

/** Settings given explicitly, and which of the two places gave each. */
export interface Overrides {
  /** Descriptor fields (family, pooling, files, family_options...). */
  values: Record<string, unknown>;
  /** Field → `SVC_MODELS entry` or the override file's name. */
  origin: Record<string, string>;
}

/** Merge the override file's fields with the entry's settings (the entry wins). */
export function mergeOverrides(
  file: Record<string, unknown> | undefined,
  entry: Record<string, unknown>,
): Overrides {
  const values: Record<string, unknown> = {};
  const origin: Record<string, string> = {};
  for (const [k, v] of Object.entries(file ?? {})) {
    values[k] = v;
    origin[k] = OVERRIDE_FILE;
  }
  for (const [k, v] of Object.entries(entry)) {
    values[k] = v;
    origin[k] = "SVC_MODELS entry";
  }
  return { values, origin };
}

/** Collects detected settings in order. */
export class Recorder {
  readonly settings: Record<string, DetectedSetting> = {};

  constructor(readonly overrides: Overrides) {}

  /** Record `value` for `key` as read from `from`; returns the value. */
  set<T>(key: string, value: T, from: string): T {
    this.settings[key] = { value, from };
    return value;
  }

  /** The explicit value of `key`, recorded as such, or undefined when none was given. */
  given<T = unknown>(key: string): T | undefined {
    if (!Object.hasOwn(this.overrides.values, key)) return undefined;
    const value = this.overrides.values[key] as T;
    this.set(key, value, this.overrides.origin[key]);
    return value;
  }

  /** The explicit value of `key.sub` (files, family_options), recorded, or undefined. */
  givenIn<T = unknown>(key: string, sub: string): T | undefined {
    const obj = this.overrides.values[key];
    if (!obj || typeof obj !== "object" || !Object.hasOwn(obj, sub)) return undefined;
    const value = (obj as Record<string, unknown>)[sub] as T;
    this.set(`${key}.${sub}`, value, this.overrides.origin[key]);
    return value;
  }
}
