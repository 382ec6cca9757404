/** Public surface of the worker package: assembly of a worker and its process lifecycle. */
export { createWorker, type WorkerInstance } from "./bootstrap.ts";
export { runWorkerProcess } from "./server/lifecycle.ts";
