/** Public entry of `shared/`: the wire contract used by router, worker, clients and tests. */

export * from "./errors.ts";
export * from "./headers.ts";
export * from "./version.ts";
export * from "./schemas/mod.ts";
export * from "./codec/mod.ts";
