/** Public surface of the router package: configuration, assembly, and the Hono app. */
export { loadRouterSettings, type RouterSettings } from "./settings.ts";
export { type RunningRouter, type StartOptions, startRouter } from "./server.ts";
export { createRouterApp } from "./app.ts";
export type { RouterContext, RouterEnv } from "./context.ts";
export type { WorkerDirectory, WorkerRecord } from "./directory/types.ts";
export { KvWorkerDirectory } from "./directory/kv.ts";
export { MemoryWorkerDirectory } from "./directory/memory.ts";
