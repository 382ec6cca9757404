/**
 * Every family's main-thread info, one entry per family of the catalog schema: a mapped
 * `Record<Family, …>`, so a family added to `FAMILY_OPS` without its `info.ts` does not compile.
 * Free of ONNX Runtime and the tokenizer (the adapters are in `adapters.ts`).
 */
import type { Family } from "@svc/shared/catalog/schema";
import type { FamilyInfo } from "./info.ts";
import { denseInfo } from "./dense/info.ts";
import { staticInfo } from "./static/info.ts";
import { sparseInfo } from "./sparse/info.ts";
import { colbertInfo } from "./colbert/info.ts";
import { bgeM3Info } from "./bge_m3/info.ts";
import { rerankerInfo } from "./reranker/info.ts";
import { glinerInfo } from "./gliner/info.ts";
import { tokenClassificationInfo } from "./token_classification/info.ts";
import { zeroShotInfo } from "./zero_shot/info.ts";
import { gliclassInfo } from "./gliclass/info.ts";
import { clipInfo } from "./clip/info.ts";
import { detectionInfo } from "./detection/info.ts";
import { zeroShotDetectionInfo } from "./zero_shot_detection/info.ts";

/** Each family's info, keyed by the family it describes. */
export const FAMILY_INFOS: { readonly [F in Family]: FamilyInfo<F> } = {
  dense: denseInfo,
  sparse: sparseInfo,
  colbert: colbertInfo,
  bge_m3: bgeM3Info,
  reranker: rerankerInfo,
  gliner: glinerInfo,
  token_classification: tokenClassificationInfo,
  zero_shot: zeroShotInfo,
  gliclass: gliclassInfo,
  clip: clipInfo,
  detection: detectionInfo,
  zero_shot_detection: zeroShotDetectionInfo,
  static: staticInfo,
};
