/** The router's middleware factories. */
export { accessLog, endpointLabel } from "./access_log.ts";
export { apiKeyAuth } from "./api_keys.ts";
export { serverVersion } from "./version.ts";
