/** The router's `/ws/status`: the fleet in the worker's status schema. */
export * from "./message.ts";
export * from "./stream.ts";
