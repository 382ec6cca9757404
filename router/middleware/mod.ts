/** The router's middleware factories. */
export { accessLog, endpointLabel } from "./access_log.ts";
export { allowed, requireRights } from "./access.ts";
export { serverVersion } from "./version.ts";
