/**
 * `@svc/worker`: a worker's assembly and process lifecycle, and what the operations tools
 * (`deno task start`, `catalog:verify`, the offline GloVe) use of it. This entry loads the native
 * image library; the lighter entries load none: `./settings` (the settings schema and its
 * reference), `./weights` (the weight store and the cache's atomic writer), `./gpu` (the GPU
 * inventory from nvidia-smi), `./cuda` (ONNX Runtime's CUDA provider files).
 */
export { createWorker, type WorkerInstance } from "./bootstrap.ts";
export { runWorkerProcess } from "./server/lifecycle.ts";
export { serveWorkerApp } from "./server/http_server.ts";
export { loadCatalog } from "./catalog/loader.ts";
export type { ServedCatalog } from "./catalog/served.ts";
export { familyOp } from "./families/kinds.ts";
export { FAMILY_INFOS } from "./families/infos.ts";
export type { FamilyInfo, GraphContract } from "./families/info.ts";
export {
  COLBERT_OUTPUTS,
  DENSE_OUTPUTS,
  M3_HEAD_OUTPUTS,
  RERANKER_OUTPUTS,
  SPARSE_OUTPUTS,
} from "./families/output_names.ts";
export { cosine } from "./service/similarity.ts";
