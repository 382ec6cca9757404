/**
 * A process's settings: one zod object schema made of {@link Setting} fields, keyed by variable
 * name, parsed once at start-up. Every bad variable is reported in one error that names it.
 */
import { z } from "zod";
import type { Env, Setting, SettingInfo } from "./fields.ts";

/** Fields keyed by environment variable name. */
export type Fields = Readonly<Record<string, Setting<unknown>>>;

/** The parsed values of `F`, keyed like it. */
export type ValuesOf<F extends Fields> = {
  -readonly [K in keyof F]: F[K] extends Setting<infer T> ? T : never;
};

/** A slice of the settings a part receives: each key names the variable whose value it holds. */
export type SliceMap<V> = Readonly<Record<string, keyof V>>;

/** The slice `M` of parsed values `V`: each key typed as its variable's parsed value. */
export type SliceOf<V, M extends SliceMap<V>> = { -readonly [K in keyof M]: V[M[K]] };

/** The parsed values of a schema. */
export type SchemaValues<S> = S extends SettingsSchema<infer V> ? V : never;

/** Read the slice `map` out of the parsed `values` (one place names each variable's key). */
export function sliceOf<V, const M extends SliceMap<V>>(values: V, map: M): SliceOf<V, M> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(map)) out[key] = values[map[key]];
  return out as SliceOf<V, M>;
}

/** One bad variable. */
export interface ConfigIssue {
  /** The variable's name. */
  name: string;
  /** What is wrong, phrased to follow the name ("must be ..."). */
  message: string;
}

/** Start-up must stop: the message names every bad variable (never a secret's value). */
export class ConfigError extends Error {
  /** Each bad variable with its problem. */
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    super(issues.map((i) => `${i.name} ${i.message}`).join("; "));
    this.name = "ConfigError";
    this.issues = issues;
  }
}

/** Checks across fields, run once every field parsed; `issue` reports a problem of one field. */
export type CrossCheck<V> = (
  values: V,
  issue: (name: keyof V & string, message: string) => void,
) => void;

/** A process's settings schema. */
export interface SettingsSchema<V> {
  /** Every variable it reads, in declaration order. */
  readonly names: readonly string[];
  /** What the configuration reference shows of each variable. */
  readonly fields: Readonly<Record<string, SettingInfo>>;
  /** Parse `env`; throws a {@link ConfigError} naming every bad variable. */
  load(env: Env): V;
  /** The values of its secret fields in `values` (for log redaction). */
  secretsOf(values: V): string[];
}

/** Build a process's settings schema from its fields and the checks that span several of them. */
export function settingsSchema<F extends Fields>(
  fields: F,
  check?: CrossCheck<ValuesOf<F>>,
): SettingsSchema<ValuesOf<F>> {
  const names = Object.keys(fields);
  const shape: Record<string, z.ZodType<unknown, string | undefined>> = {};
  for (const name of names) shape[name] = fields[name].schema;
  const schema = z.object(shape);
  return {
    names,
    fields,
    load(env) {
      const raw: Record<string, string | undefined> = {};
      for (const name of names) {
        const v = env[name];
        raw[name] = v === undefined || v.trim() === "" ? fields[name].fallback?.(env) : v;
      }
      const r = schema.safeParse(raw);
      if (!r.success) {
        throw new ConfigError(
          r.error.issues.map((i) => ({ name: String(i.path[0]), message: i.message })),
        );
      }
      // Cross checks run on fully parsed values only, so they never see a half-read field.
      const values = r.data as ValuesOf<F>;
      const issues: ConfigIssue[] = [];
      check?.(values, (name, message) => issues.push({ name, message }));
      if (issues.length > 0) throw new ConfigError(issues);
      return values;
    },
    secretsOf(values) {
      const out: string[] = [];
      for (const name of names) {
        if (!fields[name].secret) continue;
        const v = (values as Record<string, unknown>)[name];
        if (typeof v === "string") out.push(v);
        else if (Array.isArray(v)) out.push(...v.filter((x): x is string => typeof x === "string"));
      }
      return out;
    },
  };
}
