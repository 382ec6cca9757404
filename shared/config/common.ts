/**
 * Settings both processes read with the same meaning: listen address, logging, the fleet's worker
 * token and the input limits. Declared once here so router and worker cannot drift apart.
 */
import { DEFAULT_LIMITS, type InputLimits, LIMIT_MAX } from "../codec/limits.ts";
import { workerTokenProblem } from "../fleet/protocol.ts";
import { LOG_LEVELS, type LogLevel } from "../log/level.ts";
import { bool, int, oneOf, secret, type Setting, str } from "./fields.ts";

/** Values of {@link COMMON_FIELDS}. */
export interface CommonValues {
  SVC_PORT: number;
  SVC_HOST: string;
  SVC_LOG_JSON: boolean;
  SVC_LOG_LEVEL: LogLevel;
  SVC_WORKER_TOKEN: string | undefined;
  SVC_MAX_BODY_BYTES: number;
  SVC_MAX_NESTING_DEPTH: number;
  SVC_MAX_ITEMS: number;
  SVC_MAX_STRING_LENGTH: number;
}

/** A limit setting from the codec's default and bound of `key`. */
function limit(key: keyof InputLimits, doc: string, shown?: string): Setting<number> {
  return int({ min: 1, max: LIMIT_MAX[key], default: DEFAULT_LIMITS[key], doc, shown });
}

/** Settings of router and worker alike. */
export const COMMON_FIELDS: { readonly [K in keyof CommonValues]: Setting<CommonValues[K]> } = {
  SVC_PORT: int({ min: 0, max: 65535, default: 8080, doc: "listen port (`0`: any free port)" }),
  SVC_HOST: str({ default: "0.0.0.0", doc: "listen address" }),
  SVC_LOG_JSON: bool({ default: false, doc: "one JSON object per log line instead of text" }),
  SVC_LOG_LEVEL: oneOf(LOG_LEVELS, {
    default: "info",
    doc: "least severe level logged: `debug`, `info`, `warn` or `error`",
  }),
  SVC_WORKER_TOKEN: secret({
    doc: "the fleet's shared secret (at least 16 characters, compared in constant time, never " +
      "logged). Router: workers must present it (unset refuses every worker). Worker: required " +
      "with `SVC_ROUTER_URL`",
    check: workerTokenProblem,
  }),
  SVC_MAX_BODY_BYTES: limit(
    "maxBodyBytes",
    "largest request body, in bytes (also what the router buffers)",
    "`33554432` (32 MiB)",
  ),
  SVC_MAX_NESTING_DEPTH: limit("maxDepth", "nesting depth of JSON/msgpack bodies"),
  SVC_MAX_ITEMS: limit("maxItems", "items (and list entries) per request"),
  SVC_MAX_STRING_LENGTH: limit("maxStringLength", "characters per string"),
};

/** The input limits slice of parsed settings. */
export function limitsOf(v: CommonValues): InputLimits {
  return Object.freeze({
    maxBodyBytes: v.SVC_MAX_BODY_BYTES,
    maxDepth: v.SVC_MAX_NESTING_DEPTH,
    maxItems: v.SVC_MAX_ITEMS,
    maxStringLength: v.SVC_MAX_STRING_LENGTH,
  });
}

/** What a logger needs from the settings. */
export interface LogSettings {
  json: boolean;
  level: LogLevel;
}

/** The logging slice of parsed settings. */
export function logSettingsOf(v: CommonValues): LogSettings {
  return { json: v.SVC_LOG_JSON, level: v.SVC_LOG_LEVEL };
}
