/** Structured logs: one line per event, text or JSON (`SVC_LOG_JSON=1`); secrets are redacted. */

import { secretRedactor } from "@svc/shared/redact";

/** Log severity. */
export type LogLevel = "debug" | "info" | "warn" | "error";
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A logger function set. */
export interface Logger {
  log(level: LogLevel, msg: string, fields?: Record<string, unknown>): void;
}

/** Build a logger; every value in `secrets` is replaced by `***` wherever it appears. */
export function createLogger(opts: {
  json: boolean;
  level: LogLevel;
  secrets?: (string | undefined)[];
  write?: (line: string) => void;
}): Logger {
  const write = opts.write ?? ((line: string) => console.log(line));
  const redact = secretRedactor(opts.secrets ?? []);
  return {
    log(level, msg, fields = {}) {
      if (ORDER[level] < ORDER[opts.level]) return;
      const ts = new Date().toISOString();
      if (opts.json) {
        write(redact(JSON.stringify({ ts, level, msg, ...fields })));
        return;
      }
      const kv = Object.entries(fields).map(([k, v]) =>
        `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`
      );
      write(redact([ts, level.toUpperCase(), msg, ...kv].join(" ")));
    },
  };
}
