/** The worker ↔ router fleet protocol: message schemas, constants and frame codec. */
export * from "./protocol.ts";
