/**
 * What an extract request asks of its model: the batch parameters for the inference thread and
 * the result lists each item carries. Every family accepts only the params it can honour; an
 * instruction a family cannot read is a 400, never silently dropped. Each family's own plan is in
 * its folder (`worker/families/<family>/`), reached through `FAMILY_INFOS`.
 */
import type { ServedModel } from "@svc/shared/catalog";
import { FAMILIES, type Family } from "@svc/shared/catalog/schema";
import { invalidInput } from "@svc/shared/errors";
import type { ExtractParams } from "@svc/shared/schemas/extract";
import { FAMILY_INFOS } from "../../families/infos.ts";
import { checkLora, effectiveOptions } from "../params.ts";
import type { Common, ExtractPlan, PlanContext } from "./common.ts";
import { MAX_INSTRUCTION_LENGTH } from "./limits.ts";

export type { Common, ExtractOutput, ExtractPlan, PlanContext } from "./common.ts";

/** Extract options only some families read: elsewhere they are a 400, not silently ignored. */
const FAMILY_OPTIONS: Record<string, readonly Family[]> = {};
for (const family of FAMILIES) {
  for (const name of FAMILY_INFOS[family].extract?.options ?? []) {
    FAMILY_OPTIONS[name] ??= [] as Family[];
    (FAMILY_OPTIONS[name] as Family[]).push(family);
  }
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
  const extract = FAMILY_INFOS[family].extract;
  if (p.output_schema !== undefined && !extract?.fillsSchema) {
    throw invalidInput(
      `model '${served.config.id}' (${family}) cannot fill params.output_schema: ` +
        `structured data comes from span models (GLiNER)`,
    );
  }
  if (!extract) {
    throw invalidInput(`model '${served.config.id}' is a ${family} model, not an extract model`);
  }
  return extract.plan(served, p, common, context);
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
