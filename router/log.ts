/** Router logging: one line per event, JSON when configured, never carrying secrets. */

import { secretRedactor } from "@svc/shared/redact";

/** Log levels, lowest first. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** The logging function every router module receives. */
export type Logger = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** Field names whose values are replaced before printing (defence in depth: callers never pass them). */
const SECRET_FIELD = /token|authorization|api[_-]?key|secret|password/i;

/**
 * Build a logger writing to the console at or above `minLevel`. Besides secret-named fields, every
 * value in `secrets` is replaced wherever it appears in a line (e.g. inside an error message).
 */
export function createLogger(
  opts: { json: boolean; minLevel: LogLevel; secrets?: readonly (string | undefined)[] },
): Logger {
  const min = RANK[opts.minLevel];
  const redact = secretRedactor(opts.secrets ?? [], "[redacted]");
  return (level, msg, fields = {}) => {
    if (RANK[level] < min) return;
    const safe: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(fields)) {
      if (v !== undefined) safe[k] = SECRET_FIELD.test(k) ? "[redacted]" : v;
    }
    const line = redact(
      opts.json
        ? JSON.stringify({ ts: new Date().toISOString(), level, component: "router", msg, ...safe })
        : `${new Date().toISOString()} ${level.toUpperCase()} router ${msg}${formatFields(safe)}`,
    );
    if (level === "error" || level === "warn") console.error(line);
    else console.log(line);
  };
}

/** `key=value` pairs for the plain-text format. */
function formatFields(fields: Record<string, unknown>): string {
  const parts = Object.entries(fields).map(([k, v]) =>
    `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`
  );
  return parts.length ? " " + parts.join(" ") : "";
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = () => {};
