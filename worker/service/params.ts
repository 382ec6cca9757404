/** Turning a request's params and options into batch parameters, with validation against the model. */
import type { ModelConfig } from "@svc/shared/catalog/schema";
import type { ServedModel } from "@svc/shared/catalog";
import { invalidInput } from "@svc/shared/errors";
import { LORA_FAMILIES, supportsLora } from "../families/kinds.ts";
import { checkLoraId } from "../lora/lora_id.ts";
import type { WorkParams } from "../families/types.ts";
import {
  type EncodeParams,
  OUTPUT_TYPES,
  type OutputDtype,
  type OutputType,
} from "@svc/shared/schemas/encode";

/** Encode settings after merging profile and request. */
export interface EncodePlan {
  params: WorkParams;
  /** Outputs to return, each one the model produces. */
  outputTypes: OutputType[];
  dtype: OutputDtype;
  /** Matryoshka truncation of dense vectors (then re-normalised). */
  dimensions?: number;
}

/** Merge profile options under request options; `options.profile` may pick another profile. */
export function effectiveOptions(
  served: ServedModel,
  requestOptions: Record<string, unknown> | undefined,
): { modelProfile: string; options: Record<string, unknown> } {
  const opts = { ...(requestOptions ?? {}) };
  let modelProfile = served.modelProfile;
  if (opts.profile !== undefined) {
    if (typeof opts.profile !== "string") throw invalidInput("options.profile must be a string");
    if (!Object.hasOwn(served.config.profiles, opts.profile)) {
      const known = Object.keys(served.config.profiles).join(", ") || "none";
      throw invalidInput(
        `unknown profile '${opts.profile}' for model '${served.config.id}' (profiles: ${known})`,
      );
    }
    modelProfile = opts.profile;
  }
  delete opts.profile;
  const fromProfile = served.config.profiles[modelProfile]?.options ?? {};
  return { modelProfile, options: { ...fromProfile, ...opts } };
}

/**
 * Validate `options.lora_id` (a hub repository id, checked before anything is fetched) against
 * the model's family; returns the adapter id, or undefined when none is asked for.
 */
export function checkLora(
  config: ModelConfig,
  options: Record<string, unknown>,
): string | undefined {
  const lora = options.lora_id;
  if (lora === undefined) return undefined;
  const id = checkLoraId(lora);
  if (!supportsLora(config.family)) {
    throw invalidInput(
      `model '${config.id}' does not support LoRA adapters (${config.family} models; adapters ` +
        `apply to ${LORA_FAMILIES.join(", ")} encoders)`,
    );
  }
  return id;
}

/** `query` / `document` from `options.input_type` or `options.is_query`. */
export function inputTypeOf(options: Record<string, unknown>): "query" | "document" | undefined {
  const t = options.input_type;
  if (t !== undefined) {
    if (t !== "query" && t !== "document") {
      throw invalidInput("options.input_type must be 'query' or 'document'");
    }
    return t;
  }
  if (options.is_query !== undefined) {
    if (typeof options.is_query !== "boolean") {
      throw invalidInput("options.is_query must be boolean");
    }
    return options.is_query ? "query" : "document";
  }
  return undefined;
}

/** Validate a Matryoshka size against the model's dense dimension. */
export function checkDimensions(config: ModelConfig, value: unknown, field: string): number {
  const dims = config.dims.dense;
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
    throw invalidInput(`${field} must be a positive integer`);
  }
  if (dims === undefined || value > dims) {
    throw invalidInput(`${field} ${value} exceeds the model's dense dimension ${dims ?? 0}`);
  }
  return value;
}

/**
 * Output types when the request names none: `dense` (as the API specifies) for models that have
 * it; otherwise what the profile enables (a ColBERT-only model answers multivector).
 */
export function defaultOutputTypes(config: ModelConfig, modelProfile: string): OutputType[] {
  if (config.outputs.includes("dense")) return ["dense"];
  const fromProfile = config.profiles[modelProfile]?.output_types ?? config.outputs;
  return fromProfile.filter((t): t is OutputType => OUTPUT_TYPES.includes(t as OutputType));
}

/** Build the batch parameters of an encode request (types and values already schema-checked). */
export function planEncode(served: ServedModel, p: Partial<EncodeParams> | undefined): EncodePlan {
  const config = served.config;
  const { modelProfile, options } = effectiveOptions(served, p?.options);
  const lora = checkLora(config, options);
  const outputTypes = p?.output_types ?? defaultOutputTypes(config, modelProfile);
  for (const t of outputTypes) {
    if (!config.outputs.includes(t)) {
      throw invalidInput(
        `model '${config.id}' does not produce '${t}' (it produces: ${config.outputs.join(", ")})`,
      );
    }
  }
  const inputType = inputTypeOf(options);
  const promptOf = inputType ?? config.default_input_type;
  const prefix = p?.instruction ?? (promptOf ? config.prompts[promptOf] : undefined);
  const dimensions = options.dimensions === undefined
    ? undefined
    : checkDimensions(config, options.dimensions, "options.dimensions");
  return {
    params: { op: "encode", prefix, inputType, outputs: outputTypes, lora },
    outputTypes,
    dtype: p?.output_dtype ?? "float32",
    dimensions,
  };
}
