/**
 * Extract plans of the detection families. Closed-set detectors (DETR, YOLOS) find the classes
 * they were trained on; `params.labels`, when given, keeps only those. Open-vocabulary detectors
 * (OWL-ViT, OWLv2) find what `params.labels` names: the labels are their text queries (required,
 * at most {@link MAX_QUERIES}). Neither reads an instruction. `options.threshold` overrides the
 * catalog's default score threshold.
 */
import type { ServedModel } from "@svc/shared/catalog";
import { invalidInput } from "@svc/shared/errors";
import type { ExtractParams } from "@svc/shared/schemas/extract";
import type { WorkParams } from "../../families/types.ts";
import { checkLabelList } from "./labels.ts";
import { MAX_LABELS } from "./limits.ts";

/**
 * Most text queries of one open-vocabulary request: every query is a text row run with each
 * image, and the published models were trained with a few dozen queries per image.
 */
export const MAX_QUERIES = 32;

/** What the vision plans need from the shared extract checks. */
export interface VisionCommon {
  threshold?: number;
  instruction?: string;
}

function refuseInstruction(served: ServedModel, c: VisionCommon): void {
  if (c.instruction !== undefined) {
    throw invalidInput(
      `model '${served.config.id}' (${served.config.family}) cannot apply params.instruction: ` +
        `a detector reads the image (and its labels) only`,
    );
  }
}

/** Closed-set detection: optional label filter, threshold. */
export function planDetection(
  served: ServedModel,
  p: ExtractParams,
  c: VisionCommon,
): { work: WorkParams; outputs: ["objects"] } {
  refuseInstruction(served, c);
  const labels = checkLabelList(p.labels, "params.labels", MAX_LABELS);
  return { work: { op: "extract", labels, threshold: c.threshold }, outputs: ["objects"] };
}

/** Open-vocabulary detection: the labels are the queries. */
export function planZeroShotDetection(
  served: ServedModel,
  p: ExtractParams,
  c: VisionCommon,
): { work: WorkParams; outputs: ["objects"] } {
  refuseInstruction(served, c);
  const labels = checkLabelList(p.labels, "params.labels", MAX_QUERIES);
  if (labels === undefined) {
    throw invalidInput(
      `model '${served.config.id}' finds the objects it is told to look for: ` +
        `params.labels must list at least one (e.g. ["a cat", "a remote control"])`,
    );
  }
  return { work: { op: "extract", labels, threshold: c.threshold }, outputs: ["objects"] };
}
