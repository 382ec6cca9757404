/**
 * `@svc/router`: the router's assembly, for a process that runs one in-process (`deno task start`).
 * Its settings schema and reference, without the server, are `@svc/router/settings`.
 */
export { type RunningRouter, type StartOptions, startRouter } from "./server.ts";
export { parseCidr } from "./fleet/networks.ts";
