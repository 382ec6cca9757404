/** The worker directory: interface, in-memory and Deno KV implementations, and how one opens. */
export type { WorkerDirectory, WorkerModel, WorkerRecord } from "./types.ts";
export { KvWorkerDirectory } from "./kv.ts";
export { MemoryWorkerDirectory } from "./memory.ts";
export { openDirectory, type OpenedDirectory } from "./open.ts";
