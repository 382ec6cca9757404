/**
 * A PEFT LoRA adapter's `adapter_config.json`: the fields that decide how its weights merge into
 * the base model, validated, with everything we cannot apply refused by name (DoRA, trained
 * biases, saved full modules, per-module rank or alpha patterns, other PEFT methods).
 */
import { z } from "zod";

/** What merging needs from the configuration. */
export interface LoraConfig {
  /** Rank of every module's update (lora_A has `r` rows, lora_B `r` columns). */
  r: number;
  loraAlpha: number;
  /** Scale of the update: `lora_alpha / r`, or `lora_alpha / √r` with rsLoRA. */
  scale: number;
  /** Module names (matched as the last dotted parts of a module path), or a regular expression. */
  targetModules: string[] | { pattern: string };
  /**
   * The base weight is stored `[in, out]` in PyTorch (GPT-2's Conv1D). It does not change the
   * update applied to an ONNX graph: the graph's own operator says how its weight is laid out.
   */
  fanInFanOut: boolean;
  /** Hub id (or local path) of the model the adapter was trained on, when recorded. */
  baseModel: string | undefined;
}

/** Largest rank accepted: far above what adapters use, small enough to bound the work. */
export const MAX_LORA_RANK = 4096;

const Schema = z.object({
  peft_type: z.string().optional(),
  r: z.number().int().min(1).max(MAX_LORA_RANK),
  lora_alpha: z.number().positive().finite().optional(),
  target_modules: z.union([z.array(z.string().min(1).max(256)).max(1024), z.string().max(1024)])
    .nullable().optional(),
  fan_in_fan_out: z.boolean().optional(),
  use_rslora: z.boolean().optional(),
  use_dora: z.boolean().optional(),
  bias: z.string().optional(),
  modules_to_save: z.array(z.string()).nullable().optional(),
  rank_pattern: z.record(z.string(), z.unknown()).nullable().optional(),
  alpha_pattern: z.record(z.string(), z.unknown()).nullable().optional(),
  base_model_name_or_path: z.string().max(1024).nullable().optional(),
});

/** The configuration cannot be applied; the message says which field and why. */
export class LoraConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LoraConfigError";
  }
}

/** Validate a parsed `adapter_config.json`. */
export function parseLoraConfig(json: unknown): LoraConfig {
  const parsed = Schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.length > 0 ? issue.path.join(".") : "adapter_config.json";
    throw new LoraConfigError(`adapter_config.json: ${where}: ${issue.message}`);
  }
  const c = parsed.data;
  const refuse = (why: string) => new LoraConfigError(`adapter_config.json: ${why}`);
  if (c.peft_type !== undefined && c.peft_type.toUpperCase() !== "LORA") {
    throw refuse(`peft_type '${c.peft_type}' is not LORA`);
  }
  if (c.use_dora) throw refuse("use_dora (DoRA) adapters are not supported");
  if (c.bias !== undefined && c.bias !== "none") {
    throw refuse(`bias '${c.bias}' trains biases, which are not supported (only 'none')`);
  }
  if (c.modules_to_save && c.modules_to_save.length > 0) {
    throw refuse(
      `modules_to_save (${c.modules_to_save.join(", ")}) replaces whole modules, which is not ` +
        "supported",
    );
  }
  for (const key of ["rank_pattern", "alpha_pattern"] as const) {
    const pattern = c[key];
    if (pattern && Object.keys(pattern).length > 0) {
      throw refuse(`${key} (per-module ranks or alphas) is not supported`);
    }
  }
  if (!c.target_modules || c.target_modules.length === 0) {
    throw refuse("target_modules is missing or empty");
  }
  const loraAlpha = c.lora_alpha ?? 8;
  return {
    r: c.r,
    loraAlpha,
    scale: c.use_rslora ? loraAlpha / Math.sqrt(c.r) : loraAlpha / c.r,
    targetModules: typeof c.target_modules === "string"
      ? { pattern: c.target_modules }
      : c.target_modules,
    fanInFanOut: c.fan_in_fan_out ?? false,
    baseModel: c.base_model_name_or_path ?? undefined,
  };
}
