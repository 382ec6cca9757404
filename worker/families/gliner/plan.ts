/**
 * The extract plan of GLiNER models: entity types, an `output_schema` filled from spans, and on
 * multitask models relation types with the entity types their heads and tails are found as.
 */
import type { ServedModel } from "@svc/shared/catalog";
import { invalidInput } from "@svc/shared/errors";
import type { ExtractParams } from "@svc/shared/schemas/extract";
import type { Common, ExtractPlan, PlanContext } from "../../service/extract/common.ts";
import { checkLabelList } from "../../service/extract/labels.ts";
import { compileSchema, type SchemaPlan } from "../../service/extract/output_schema.ts";
import { MAX_ENTITY_LABELS, MAX_LABELS } from "../../service/extract/limits.ts";

/**
 * GLiNER: entity types in `labels`, and/or an `output_schema` whose fields are found as spans in
 * the same pass. On a multitask model, `labels` are relation types instead (see planRelations).
 */
export function planGliner(
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
