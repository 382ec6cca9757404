/**
 * What each model family does, without loading it: the op it serves (from the catalog schema's
 * family list) and whether it takes LoRA adapters, read from `FAMILY_INFOS`. The main thread
 * reads it (model gate), while the adapters themselves (and ONNX Runtime with them) load only
 * inside inference threads.
 */
import { FAMILIES, type Family, FAMILY_OPS } from "@svc/shared/catalog/schema";
import { FAMILY_INFOS } from "./infos.ts";
import type { Op } from "./types.ts";

/** Families that take LoRA adapters (each family's `info.ts` says), in `FAMILIES` order. */
export const LORA_FAMILIES: readonly Family[] = FAMILIES.filter((f) => FAMILY_INFOS[f].lora);

/** True when models of `family` accept `options.lora_id`. */
export function supportsLora(family: Family): boolean {
  return LORA_FAMILIES.includes(family);
}

/** The op each family serves. */
export function familyOp(family: Family): Op {
  return FAMILY_OPS[family];
}

/**
 * Whether a family answers `op`: its own op, and `score` for every encode family too (items are
 * ranked by the similarity of their embeddings to the query's).
 */
export function familyServes(family: Family, op: Op): boolean {
  const own = FAMILY_OPS[family];
  return own === op || (op === "score" && own === "encode");
}
