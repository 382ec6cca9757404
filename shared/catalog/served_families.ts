/**
 * Which catalog families this release can run. Shared so the router's /v1/models marks the same
 * entries as the worker's; the adapters themselves live in `worker/families/` (a worker test
 * checks that every family listed here has one).
 */
import type { Family } from "./schema.ts";

/** Families this release has an adapter for. */
export const ADAPTER_FAMILIES = [
  "dense",
  "static",
  "sparse",
  "colbert",
  "bge_m3",
  "reranker",
  "token_classification",
  "gliner",
  "zero_shot",
  "gliclass",
  "clip",
  "detection",
  "zero_shot_detection",
] as const satisfies readonly Family[];

/** A family with an adapter. */
export type AdapterFamily = typeof ADAPTER_FAMILIES[number];

/** True when this release has an adapter for `family` (others are listed but cannot load). */
export function hasAdapter(family: Family): family is AdapterFamily {
  return (ADAPTER_FAMILIES as readonly string[]).includes(family);
}
