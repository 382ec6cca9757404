/** Log severities, lowest first. */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;

/** Log severity. */
export type LogLevel = typeof LOG_LEVELS[number];
