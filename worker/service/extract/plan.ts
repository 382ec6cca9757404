/**
 * What an extract request asks of its model: the batch parameters for the inference thread and
 * the result lists each item carries. Every family accepts only the params it can honour; an
 * instruction a family cannot read is a 400, never silently dropped.
 */
import type { ServedModel } from "@svc/shared/catalog";
import type { Family } from "@svc/shared/catalog/schema";
import { invalidInput } from "@svc/shared/errors";
import type { ExtractParams } from "@svc/shared/schemas/extract";
import type { WorkParams } from "../../families/types.ts";
import { checkLora, effectiveOptions } from "../params.ts";
import { planDetection, planZeroShotDetection } from "./vision.ts";
import { checkLabel, checkLabelList } from "./labels.ts";
import { compileSchema, type SchemaPlan } from "./output_schema.ts";
import {
  MAX_ENTITY_LABELS,
  MAX_INSTRUCTION_LENGTH,
  MAX_LABELS,
  MAX_TEMPLATE_LENGTH,
} from "./limits.ts";

/** The NLI template used when neither the request nor the catalog names one. */
const DEFAULT_HYPOTHESIS_TEMPLATE = "This example is {}.";

/** Extract options only some families read: elsewhere they are a 400, not silently ignored. */
const FAMILY_OPTIONS: Record<string, readonly Family[]> = {
  hypothesis_template: ["zero_shot"],
  multi_label: ["zero_shot", "gliclass"],
  entity_labels: ["gliner"],
};

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

/** Build the plan of an extract request; throws INVALID_INPUT on params the model cannot take. */
export function planExtract(
  served: ServedModel,
  p: ExtractParams,
  context: PlanContext = {},
): ExtractPlan {
  // `params.threshold` (the SIE TypeScript client puts it there) is a request option too.
  if (p.threshold !== undefined && !(p.threshold >= 0 && p.threshold <= 1)) {
    throw invalidInput("params.threshold must be a number from 0 to 1");
  }
  const requested = p.threshold !== undefined && p.options?.threshold === undefined
    ? { ...p.options, threshold: p.threshold }
    : p.options;
  const { options } = effectiveOptions(served, requested);
  checkLora(served.config, options);
  const common: Common = {
    options,
    threshold: thresholdOf(options),
    instruction: instructionOf(p),
  };
  const family = served.config.family;
  for (const [name, families] of Object.entries(FAMILY_OPTIONS)) {
    if (options[name] !== undefined && !families.includes(family)) {
      throw invalidInput(
        `options.${name} does not apply to model '${served.config.id}' (${family}); ` +
          `it is read by ${families.join(", ")} models`,
      );
    }
  }
  if (p.output_schema !== undefined && family !== "gliner") {
    throw invalidInput(
      `model '${served.config.id}' (${family}) cannot fill params.output_schema: ` +
        `structured data comes from span models (GLiNER)`,
    );
  }
  switch (family) {
    case "token_classification":
      return planTokenClassification(served, p, common);
    case "gliner":
      return planGliner(served, p, common, context);
    case "detection":
      return planDetection(served, p, common);
    case "zero_shot_detection":
      return planZeroShotDetection(served, p, common);
    case "zero_shot":
      return planZeroShot(served, p, common);
    case "gliclass":
      return planGliclass(served, p, common);
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

/**
 * GLiNER: entity types in `labels`, and/or an `output_schema` whose fields are found as spans in
 * the same pass. On a multitask model, `labels` are relation types instead (see planRelations).
 */
function planGliner(
  served: ServedModel,
  p: ExtractParams,
  c: Common,
  context: PlanContext,
): ExtractPlan {
  const schema = p.output_schema === undefined ? undefined : compileSchema(p.output_schema);
  const relationsModel = served.config.outputs.includes("relations");
  if (relationsModel && p.labels !== undefined && p.labels.length > 0) {
    return planRelations(served, p, c, schema, context);
  }
  if (c.options.entity_labels !== undefined) {
    throw invalidInput(
      relationsModel
        ? "options.entity_labels goes with params.labels, the relation types to extract"
        : `model '${served.config.id}' does not extract relations: options.entity_labels ` +
          `applies to GLiNER multitask models`,
    );
  }
  const labels = checkLabelList(p.labels, "params.labels", MAX_LABELS);
  if (labels === undefined && schema === undefined) {
    throw invalidInput(
      `model '${served.config.id}' finds the entity types it is given: ` +
        `params.labels must list at least one (e.g. ["person", "organization"]), ` +
        `or params.output_schema describe the data to fill`,
    );
  }
  return {
    work: {
      op: "extract",
      labels,
      fieldLabels: schema?.labels,
      threshold: c.threshold,
      prompt: c.instruction,
    },
    outputs: [...(labels ? ["entities" as const] : []), ...(schema ? ["data" as const] : [])],
    schema,
  };
}

/** Candidate classes are required by every zero-shot classifier. */
function candidateLabels(served: ServedModel, p: ExtractParams): string[] {
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
function multiLabelOf(served: ServedModel, options: Record<string, unknown>): boolean {
  const v = options.multi_label ?? served.config.family_options.multi_label ?? false;
  if (typeof v !== "boolean") throw invalidInput("options.multi_label must be true or false");
  return v;
}

function planZeroShot(served: ServedModel, p: ExtractParams, c: Common): ExtractPlan {
  const labels = candidateLabels(served, p);
  const raw = c.options.hypothesis_template ?? served.config.family_options.hypothesis_template ??
    DEFAULT_HYPOTHESIS_TEMPLATE;
  const template = checkLabel(raw, "options.hypothesis_template", MAX_TEMPLATE_LENGTH);
  if (template.split("{}").length !== 2) {
    throw invalidInput(
      "options.hypothesis_template must hold '{}' exactly once (where the label goes), " +
        `e.g. "${DEFAULT_HYPOTHESIS_TEMPLATE}"`,
    );
  }
  return {
    work: {
      op: "extract",
      labels,
      threshold: c.threshold,
      prompt: c.instruction,
      hypothesisTemplate: template,
      multiLabel: multiLabelOf(served, c.options),
    },
    outputs: ["classifications"],
  };
}

function planGliclass(served: ServedModel, p: ExtractParams, c: Common): ExtractPlan {
  return {
    work: {
      op: "extract",
      labels: candidateLabels(served, p),
      threshold: c.threshold,
      prompt: c.instruction,
      multiLabel: multiLabelOf(served, c.options),
    },
    outputs: ["classifications"],
  };
}

/**
 * The entity types a relations model finds when the request names none: its catalog entry's
 * `family_options.entity_labels`. Clients that send only `labels` (the SIE TypeScript SDK has no
 * `options`) then extract relations between the entities of those types.
 */
function configuredEntityLabels(served: ServedModel): string[] | undefined {
  const raw = served.config.family_options.entity_labels;
  if (!Array.isArray(raw)) return undefined;
  return checkLabelList(raw, "family_options.entity_labels", MAX_ENTITY_LABELS);
}

/**
 * A GLiNER multitask model: `labels` are relation types; entities of `options.entity_labels` are
 * found first and become the heads (and candidate tails) of a second, relation-prompted pass.
 * Items that name their entities (mentions in metadata) skip the first pass: their mentions are
 * the heads and tails, and the plan needs no entity types (`entityLabels` is then empty).
 */
function planRelations(
  served: ServedModel,
  p: ExtractParams,
  c: Common,
  schema: SchemaPlan | undefined,
  context: PlanContext,
): ExtractPlan {
  const relations = checkLabelList(p.labels, "params.labels", MAX_LABELS);
  if (relations === undefined) {
    throw invalidInput(
      `model '${served.config.id}' extracts relations: params.labels must list the relation ` +
        `types (e.g. ["works for", "lives in"]) and options.entity_labels the entity types`,
    );
  }
  const raw = c.options.entity_labels;
  if (raw !== undefined && !Array.isArray(raw)) {
    throw invalidInput("options.entity_labels must be a list of entity types");
  }
  const entityLabels = checkLabelList(raw, "options.entity_labels", MAX_ENTITY_LABELS) ??
    (context.namedEntities ? [] : configuredEntityLabels(served));
  if (entityLabels === undefined) {
    throw invalidInput(
      `relation extraction needs the entities: options.entity_labels (the entity types to find ` +
        `first, e.g. ["person", "organization"]), or on each item metadata.entities, its ` +
        `entity mentions [{text, label, start, end}] (or metadata.entity_labels, its types); ` +
        `model '${served.config.id}' configures no default types (its catalog entry's ` +
        `family_options.entity_labels, or options.entity_labels of its profile)`,
    );
  }
  return {
    work: {
      op: "extract",
      labels: relations,
      entityLabels,
      fieldLabels: schema?.labels,
      threshold: c.threshold,
      prompt: c.instruction,
    },
    outputs: ["entities", "relations", ...(schema ? ["data" as const] : [])],
    schema,
  };
}
