/**
 * What an extract request asks of its model: the batch parameters for the inference thread and
 * the result lists each item carries. Every family accepts only the params it can honour; an
 * instruction a family cannot read is a 400, never silently dropped.
 */
import type { ServedModel } from "@svc/shared/catalog";
import { invalidInput } from "@svc/shared/errors";
import type { ExtractParams } from "@svc/shared/schemas/extract";
import type { WorkParams } from "../../families/types.ts";
import { checkLora, effectiveOptions } from "../params.ts";
import { checkLabelList } from "./labels.ts";
import { MAX_INSTRUCTION_LENGTH, MAX_LABELS } from "./limits.ts";

/** A result list of ExtractResult. */
export type ExtractOutput = "entities" | "relations" | "classifications" | "data";

/** The plan of one extract request. */
export interface ExtractPlan {
  work: WorkParams;
  /** The lists every result carries, in this order. */
  outputs: ExtractOutput[];
}

/** The request's options after merging the profile's, with the checks every family shares. */
interface Common {
  options: Record<string, unknown>;
  threshold?: number;
  instruction?: string;
}

/** Build the plan of an extract request; throws INVALID_INPUT on params the model cannot take. */
export function planExtract(served: ServedModel, p: ExtractParams): ExtractPlan {
  const { options } = effectiveOptions(served, p.options);
  checkLora(served.config, options);
  const common: Common = {
    options,
    threshold: thresholdOf(options),
    instruction: instructionOf(p),
  };
  const family = served.config.family;
  switch (family) {
    case "token_classification":
      return planTokenClassification(served, p, common);
    case "gliner":
      return planGliner(served, p, common);
    default:
      throw invalidInput(`model '${served.config.id}' is a ${family} model, not an extract model`);
  }
}

function thresholdOf(options: Record<string, unknown>): number | undefined {
  const t = options.threshold;
  if (t === undefined) return undefined;
  if (typeof t !== "number" || !Number.isFinite(t) || t < 0 || t > 1) {
    throw invalidInput("options.threshold must be a number from 0 to 1");
  }
  return t;
}

function instructionOf(p: ExtractParams): string | undefined {
  const text = p.instruction;
  if (text === undefined || text.trim().length === 0) return undefined;
  if (text.length > MAX_INSTRUCTION_LENGTH) {
    throw invalidInput(`params.instruction is longer than ${MAX_INSTRUCTION_LENGTH} characters`);
  }
  return text;
}

/** A family without a prompt cannot apply an instruction: say so rather than ignore it. */
function refuseInstruction(served: ServedModel, c: Common, why: string): void {
  if (c.instruction !== undefined) {
    throw invalidInput(
      `model '${served.config.id}' (${served.config.family}) cannot apply params.instruction: ${why}`,
    );
  }
}

function planTokenClassification(served: ServedModel, p: ExtractParams, c: Common): ExtractPlan {
  refuseInstruction(served, c, "a token classifier reads the text alone");
  const labels = checkLabelList(p.labels, "params.labels", MAX_LABELS);
  return { work: { op: "extract", labels, threshold: c.threshold }, outputs: ["entities"] };
}

function planGliner(served: ServedModel, p: ExtractParams, c: Common): ExtractPlan {
  const labels = checkLabelList(p.labels, "params.labels", MAX_LABELS);
  if (labels === undefined) {
    throw invalidInput(
      `model '${served.config.id}' finds the entity types it is given: ` +
        `params.labels must list at least one (e.g. ["person", "organization"])`,
    );
  }
  return {
    work: { op: "extract", labels, threshold: c.threshold, prompt: c.instruction },
    outputs: ["entities"],
  };
}
