/** Logging shared by router and worker: one logger, one redaction, control characters escaped. */
export * from "./level.ts";
export * from "./logger.ts";
