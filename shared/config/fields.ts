/**
 * Field helpers for settings: one zod schema per environment variable, built the same way in
 * every process, so the same spelling means the same thing everywhere (booleans, lists, bounds).
 *
 * A field reads the variable's text (trimmed; empty means unset) and yields a typed value, or an
 * issue phrased to follow the variable's name ("must be an integer from 1 to 64, got \"x\"").
 * Secret and URL fields never quote the value they refuse.
 */
import { z } from "zod";
import { SLUG_RE } from "../fleet/protocol.ts";

/** The environment as a record (`Deno.env.toObject()` or a test's literal). */
export type Env = Readonly<Record<string, string | undefined>>;

/** What the configuration reference shows of a setting. */
export interface SettingInfo {
  /** One line: what the setting does. */
  readonly doc: string;
  /** The default as shown in the reference (`unset` when there is none). */
  readonly shown: string;
  /** True for tokens and keys: never logged, never quoted in an error. */
  readonly secret: boolean;
}

/** One setting: its schema (variable text in, typed value out) and what the reference says. */
export interface Setting<T> extends SettingInfo {
  readonly schema: z.ZodType<T, string | undefined>;
  /** Text used when the variable is unset, computed from other variables (HOME, ...). */
  readonly fallback?: (env: Env) => string | undefined;
}

/** Common options: the reference line, and what to show as the default when it is computed. */
export interface FieldOptions {
  doc: string;
  /** Overrides the default shown in the reference (e.g. "`~/.cache/svc/models`"). */
  shown?: string;
}

/** The text of a variable as fields see it: trimmed, empty meaning unset. */
const text = z.string().optional().transform((s) => {
  const t = s?.trim();
  return t === undefined || t === "" ? undefined : t;
});

/** Show a default value in the reference. */
function showDefault(value: unknown): string {
  if (value === undefined) return "unset";
  if (Array.isArray(value)) return value.length ? `\`${value.join(",")}\`` : "unset";
  if (typeof value === "boolean") return value ? "`1`" : "`0`";
  return `\`${String(value)}\``;
}

/** A field from a parse function over the trimmed text (undefined when unset). */
function field<T>(
  opts: FieldOptions & { secret?: boolean; fallback?: (env: Env) => string | undefined },
  defaultValue: unknown,
  parse: (t: string | undefined, fail: (message: string) => never) => T,
): Setting<T> {
  const schema = text.transform((t, ctx): T => {
    try {
      return parse(t, (message) => {
        throw new FieldProblem(message);
      });
    } catch (err) {
      if (!(err instanceof FieldProblem)) throw err;
      ctx.issues.push({ code: "custom", message: err.message, input: t });
      return z.NEVER;
    }
  });
  return {
    schema,
    doc: opts.doc,
    shown: opts.shown ?? showDefault(defaultValue),
    secret: opts.secret ?? false,
    fallback: opts.fallback,
  };
}

/** Thrown inside a parse function to report an issue (caught by {@link field}). */
class FieldProblem extends Error {}

/** Bounds and default of a numeric field. */
export interface NumberOptions<D extends number | undefined> extends FieldOptions {
  min: number;
  max: number;
  default: D;
}

/** A decimal integer within `[min, max]`. */
export function int<D extends number | undefined>(
  opts: NumberOptions<D>,
): Setting<number | D> {
  return field(opts, opts.default, (t, fail) => {
    if (t === undefined) return opts.default;
    const n = /^[+-]?\d+$/.test(t) ? Number(t) : NaN;
    if (!Number.isSafeInteger(n) || n < opts.min || n > opts.max) {
      fail(`must be an integer from ${opts.min} to ${opts.max}, got "${t}"`);
    }
    return n;
  });
}

/** A decimal number (fractions allowed) within `[min, max]`. */
export function decimal<D extends number | undefined>(
  opts: NumberOptions<D>,
): Setting<number | D> {
  return field(opts, opts.default, (t, fail) => {
    if (t === undefined) return opts.default;
    const n = /^[+-]?(\d+\.?\d*|\.\d+)$/.test(t) ? Number(t) : NaN;
    if (!Number.isFinite(n) || n < opts.min || n > opts.max) {
      fail(`must be a number from ${opts.min} to ${opts.max}, got "${t}"`);
    }
    return n;
  });
}

/** A duration in milliseconds (integer), named `*_MS` by convention. */
export function millis<D extends number | undefined>(
  opts: NumberOptions<D>,
): Setting<number | D> {
  return int(opts);
}

/** A duration in seconds (fractions allowed), named `*_S` by convention. */
export function seconds<D extends number | undefined>(
  opts: NumberOptions<D>,
): Setting<number | D> {
  return decimal(opts);
}

/** Spellings of true and false, the same in every process. */
const TRUE = new Set(["1", "true", "yes", "on"]);
const FALSE = new Set(["0", "false", "no", "off"]);

/** A boolean: `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`, any case. */
export function bool(opts: FieldOptions & { default: boolean }): Setting<boolean> {
  return field(opts, opts.default, (t, fail) => {
    if (t === undefined) return opts.default;
    const v = t.toLowerCase();
    if (TRUE.has(v)) return true;
    if (FALSE.has(v)) return false;
    return fail(`must be 1/true/yes/on or 0/false/no/off, got "${t}"`);
  });
}

/** One of a fixed set of words (compared as written). */
export function oneOf<const V extends string>(
  values: readonly V[],
  opts: FieldOptions & { default: V },
): Setting<V> {
  return field(opts, opts.default, (t, fail) => {
    if (t === undefined) return opts.default;
    if ((values as readonly string[]).includes(t)) return t as V;
    return fail(`must be one of ${values.join(", ")}, got "${t}"`);
  });
}

/** Free text; `pattern` (with its description) restricts it. */
export function str<D extends string | undefined>(
  opts: FieldOptions & {
    default: D;
    pattern?: RegExp;
    /** What the pattern means, for the error ("a lower-case slug"). */
    patternName?: string;
    fallback?: (env: Env) => string | undefined;
  },
): Setting<string | D> {
  return field(opts, opts.default, (t, fail) => {
    if (t === undefined) return opts.default;
    if (opts.pattern && !opts.pattern.test(t)) {
      fail(`must be ${opts.patternName ?? `text matching ${opts.pattern}`}, got "${t}"`);
    }
    return t;
  });
}

/** Lower-case slugs: machine profiles, pools, bundles, key prefixes (the fleet's rule). */
const SLUG = SLUG_RE;
const SLUG_NAME = "a lower-case slug (a-z, 0-9, '.', '_', '-')";

/** A slug, lower-cased before it is checked (profile names arrive as `L4`, `A100-80GB`). */
export function slug<D extends string | undefined>(
  opts: FieldOptions & { default: D },
): Setting<string | D> {
  return field(opts, opts.default, (t, fail) => {
    if (t === undefined) return opts.default;
    const v = t.toLowerCase();
    if (!SLUG.test(v)) fail(`must be ${SLUG_NAME}, got "${t}"`);
    return v;
  });
}

/** A comma-separated list; blanks around and empty entries are dropped. */
export function list(
  opts: FieldOptions & {
    /** Check of one entry: a phrase describing the problem, or undefined when it is fine. */
    item?: (entry: string) => string | undefined;
    /** Lower-case every entry (profile names). */
    lowerCase?: boolean;
    secret?: boolean;
  },
): Setting<string[]> {
  return field(opts, [], (t, fail) => {
    if (t === undefined) return [];
    const entries = t.split(",").map((s) => s.trim()).filter((s) => s !== "")
      .map((s) => opts.lowerCase ? s.toLowerCase() : s);
    for (const e of entries) {
      const problem = opts.item?.(e);
      if (problem) fail(opts.secret ? problem : `${problem}, got "${e}"`);
    }
    return entries;
  });
}

/** A list whose entries are slugs. */
export function slugList(opts: FieldOptions): Setting<string[]> {
  return list({
    ...opts,
    lowerCase: true,
    item: (e) => SLUG.test(e) ? undefined : `entries must each be ${SLUG_NAME}`,
  });
}

/**
 * A URL whose scheme is one of `schemes` (default http and https). The value is never quoted in
 * an error: URLs may carry credentials or tokens in their query.
 */
export function url<D extends string | undefined>(
  opts: FieldOptions & {
    default: D;
    schemes?: readonly string[];
    /** Refuse `user:password@` in the URL (say where the credential goes instead). */
    noCredentials?: string;
  },
): Setting<string | D> {
  const schemes = opts.schemes ?? ["http", "https"];
  return field(opts, opts.default, (t, fail) => {
    if (t === undefined) return opts.default;
    let u: URL | undefined;
    try {
      u = new URL(t);
    } catch {
      // reported below
    }
    if (!u || !schemes.includes(u.protocol.slice(0, -1))) {
      return fail(`must be a URL with scheme ${schemes.join(", ")}`);
    }
    if (opts.noCredentials !== undefined && (u.username || u.password)) {
      fail(`must not contain credentials${opts.noCredentials ? ` (${opts.noCredentials})` : ""}`);
    }
    return t;
  });
}

/** A secret (token, key): never quoted in an error, listed for log redaction. */
export function secret(
  opts: FieldOptions & {
    /** Check of the value: a phrase describing the problem (never quoting it), or undefined. */
    check?: (value: string) => string | undefined;
  },
): Setting<string | undefined> {
  return field({ ...opts, secret: true }, undefined, (t, fail) => {
    if (t === undefined) return undefined;
    const problem = opts.check?.(t);
    if (problem) fail(problem);
    return t;
  });
}

/** A filesystem path (or location); `fallback` computes the default from other variables. */
export function path<D extends string | undefined>(
  opts: FieldOptions & { default: D; fallback?: (env: Env) => string | undefined },
): Setting<string | D> {
  return str(opts);
}
