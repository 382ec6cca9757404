/** Logging shared by router and worker. */
export * from "./level.ts";
