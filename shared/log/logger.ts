/**
 * The one logger of router, worker and fleet link: one line per event, text or JSON, secrets
 * redacted (shared/redact.ts), control characters escaped in every field so that a value such as
 * a request path holding `%0A` can never start a forged line.
 */
import { secretRedactor } from "../redact.ts";
import type { LogLevel } from "./level.ts";

/** Structured fields of one event. */
export type LogFields = Record<string, unknown>;

/** Log one event. Every part of the system receives this function (tests pass their own). */
export type Logger = (level: LogLevel, msg: string, fields?: LogFields) => void;

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** One JSON object per line instead of `ts LEVEL component msg key=value...`. */
  json: boolean;
  /** Least severe level written. */
  level: LogLevel;
  /** Which process writes (`router`, `worker`): one output may carry both (`deno task start`). */
  component: string;
  /** Values replaced wherever they appear in a line (tokens, keys). */
  secrets?: readonly (string | undefined)[];
  /** Where a finished line goes (default: standard output). */
  write?: (line: string) => void;
}

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** Field names whose values are never printed (defence in depth: callers never pass them). */
const SECRET_FIELD = /token|authorization|api[_-]?key|secret|password/i;

/** The mark that replaces a secret: redact.ts's, the same in every line. */
const REDACTED = "***";

/**
 * Characters that could break or disguise a line: C0/C1 controls and DEL, the Unicode line and
 * paragraph separators, and the bidirectional overrides (which reorder what a terminal shows).
 */
// deno-lint-ignore no-control-regex -- matching control characters is this pattern's purpose
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `s` with every unsafe character written as an escape (`\n`, `\t`, `\u2028`...). */
export function escapeControl(s: string): string {
  return s.replace(UNSAFE, (c) => {
    if (c === "\n") return "\\n";
    if (c === "\r") return "\\r";
    if (c === "\t") return "\\t";
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
  });
}

/** A text-format value: bare when unambiguous, else quoted with escapes (spaces, `=`, quotes). */
function textValue(v: unknown): string {
  if (typeof v === "string") return /^[^\s"=\\]*$/.test(v) ? escapeControl(v) : quoted(v);
  const json = JSON.stringify(v);
  return json === undefined ? String(v) : escapeControl(json);
}

/** A JSON string literal with every unsafe character escaped. */
function quoted(s: string): string {
  return `"${escapeControl(JSON.stringify(s).slice(1, -1))}"`;
}

/** Fields with undefined values dropped and secret-named ones masked. */
function safeFields(fields: LogFields): LogFields {
  const out: LogFields = {};
  for (const [k, v] of Object.entries(fields)) {
    if (v !== undefined) out[k] = SECRET_FIELD.test(k) ? REDACTED : v;
  }
  return out;
}

/** Build a logger writing lines at or above `level`. */
export function createLogger(opts: LoggerOptions): Logger {
  const min = RANK[opts.level];
  const redact = secretRedactor(opts.secrets ?? [], REDACTED);
  const write = opts.write ?? ((line: string) => console.log(line));
  const component = escapeControl(opts.component);
  return (level, msg, fields = {}) => {
    if (RANK[level] < min) return;
    const ts = new Date().toISOString();
    const safe = safeFields(fields);
    let line: string;
    if (opts.json) {
      // JSON.stringify escapes C0 controls; the rest (DEL, C1, separators) are escaped after.
      line = escapeControl(JSON.stringify({ ts, level, component: opts.component, msg, ...safe }));
    } else {
      const kv = Object.entries(safe).map(([k, v]) => ` ${escapeControl(k)}=${textValue(v)}`);
      line = `${ts} ${level.toUpperCase()} ${component} ${escapeControl(msg)}${kv.join("")}`;
    }
    write(redact(line));
  };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = () => {};
