/**
 * The shapes of an extract plan and the checks the family plans share; the plans themselves live
 * with their families (`worker/families/<family>/`), dispatched by `plan.ts`.
 */
import type { ServedModel } from "@svc/shared/catalog";
import { invalidInput } from "@svc/shared/errors";
import type { ExtractParams } from "@svc/shared/schemas/extract";
import type { WorkParams } from "../../families/types.ts";
import type { SchemaPlan } from "./output_schema.ts";
import { checkLabelList } from "./labels.ts";
import { MAX_LABELS } from "./limits.ts";

/** A result list of ExtractResult. */
export type ExtractOutput = "entities" | "relations" | "classifications" | "data" | "objects";

/** The plan of one extract request. */
export interface ExtractPlan {
  work: WorkParams;
  /** The lists every result carries, in this order. */
  outputs: ExtractOutput[];
  /** The compiled `output_schema` that `data` is filled from. */
  schema?: SchemaPlan;
}

/** The request's options after merging the profile's, with the checks every family shares. */
export interface Common {
  options: Record<string, unknown>;
  threshold?: number;
  instruction?: string;
}

/** How a group of a relation request runs (see item_metadata.ts). */
export interface PlanContext {
  /** The items name their entities (mentions): a relation plan needs no entity types. */
  namedEntities?: boolean;
}

/** A family without a prompt cannot apply an instruction: say so rather than ignore it. */
export function refuseInstruction(served: ServedModel, c: Common, why: string): void {
  if (c.instruction !== undefined) {
    throw invalidInput(
      `model '${served.config.id}' (${served.config.family}) cannot apply params.instruction: ${why}`,
    );
  }
}

/** Candidate classes are required by every zero-shot classifier. */
export function candidateLabels(served: ServedModel, p: ExtractParams): string[] {
  const labels = checkLabelList(p.labels, "params.labels", MAX_LABELS);
  if (labels === undefined) {
    throw invalidInput(
      `model '${served.config.id}' classifies into the classes it is given: ` +
        `params.labels must list at least one (e.g. ["sports", "politics"])`,
    );
  }
  return labels;
}

/** `options.multi_label`, else the catalog's default for the model. */
export function multiLabelOf(served: ServedModel, options: Record<string, unknown>): boolean {
  const v = options.multi_label ?? served.config.family_options.multi_label ?? false;
  if (typeof v !== "boolean") throw invalidInput("options.multi_label must be true or false");
  return v;
}
