/**
 * The TypeScript client of the service, for Deno, Node and browsers (fetch, timers and msgpackr's
 * pure-JS halves only). `new SvcClient({baseUrl})`, then `encode`, `score`, `extract`,
 * `listModels`, `getModel`, `embeddings`; failures are an {@link SvcError} with `code`.
 */
export { type CallOptions, type ClientOptions, SvcClient } from "./client.ts";
export { type ClientErrorCode, SvcError } from "./errors.ts";
export { DEFAULT_RETRY, type RetryPolicy } from "./retry.ts";
export type { WireFormat } from "./wire.ts";
export type * from "./types.ts";
