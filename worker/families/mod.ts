/**
 * Model families. The main thread imports `kinds.ts` (and types) directly; this module also
 * re-exports the adapter table, so only inference-thread code may import it.
 */
export { familyOp } from "./kinds.ts";
export { FAMILY_ADAPTERS } from "./adapters.ts";
export type {
  AdapterContext,
  AdapterFactory,
  ItemOutput,
  ModelAdapter,
  Op,
  PreparedItem,
  RunResult,
  WorkItem,
  WorkParams,
} from "./types.ts";
