/**
 * Matching an adapter to a base graph, before any weight is touched: which graph weight each LoRA
 * module updates, and whether every shape fits. Everything that does not fit is reported by module
 * and shape (the base model it was trained on, unknown or ambiguous modules, ranks, input and
 * output sizes, weight types), so a mismatched adapter fails in milliseconds instead of producing
 * wrong vectors or a stuck load.
 *
 * PEFT saves `<prefix>.<module path>.lora_A.weight` (`[r, in]`) and `.lora_B.weight` (`[out, r]`)
 * with the prefix `base_model.model.`; the module path may carry a wrapper's prefix the export
 * lacks (`bert.`, `0.auto_model.`) or the reverse, so paths match on whole dotted parts at the end.
 */
import type { LoraConfig } from "./lora_config.ts";
import type { LinearTarget } from "./graph_targets.ts";
import { isFloatDtype } from "./safetensors.ts";

/** One graph weight to update: `W' = W + scale · (B·A)` in the weight's own layout. */
export interface WeightPatch {
  /** The adapter's module path (for messages). */
  module: string;
  initializer: string;
  layout: "in_out" | "out_in";
  inFeatures: number;
  outFeatures: number;
  rank: number;
  /** Tensor names of lora_A (`[rank, in]`) and lora_B (`[out, rank]`) in the safetensors file. */
  a: string;
  b: string;
}

/** A checked plan: every patch fits its graph weight. */
export interface LoraPlan {
  scale: number;
  patches: WeightPatch[];
}

/** The adapter does not fit the model; the message names modules and shapes. */
export class LoraMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LoraMismatchError";
  }
}

/** A tensor as the plan sees it: dtype and shape. */
export interface TensorInfo {
  dtype: string;
  shape: readonly number[];
}

/** Everything the plan is made from. */
export interface PlanInputs {
  config: LoraConfig;
  tensors: ReadonlyMap<string, TensorInfo>;
  targets: readonly LinearTarget[];
  /** The base model's catalog id and hub repository. */
  model: { id: string; repo: string };
}

const PREFIX = "base_model.model.";
const KEY_RE = /^(.+)\.lora_([AB])\.weight$/;
/** Problems listed in one message; the rest are counted. */
const MAX_LISTED = 3;

/** Match the adapter to the graph; throws {@link LoraMismatchError} when anything does not fit. */
export function planLora(inputs: PlanInputs): LoraPlan {
  const { config, tensors, targets } = inputs;
  checkBaseModel(config.baseModel, inputs.model);
  const modules = loraModules(tensors);
  const problems: string[] = [];
  checkTargetModules(config, [...modules.keys()], problems);
  const byPath = groupTargets(targets);
  const patches: WeightPatch[] = [];
  const owner = new Map<string, string>();
  for (const [module, pair] of modules) {
    const matched = matchModule(module, byPath, problems);
    if (!matched) continue;
    for (const target of matched) {
      const patch = checkShapes(module, pair, target, tensors, config, problems);
      if (!patch) continue;
      const other = owner.get(target.initializer);
      if (other !== undefined) {
        problems.push(
          `modules ${other} and ${module} both update graph weight ${target.initializer}`,
        );
        continue;
      }
      owner.set(target.initializer, module);
      patches.push(patch);
    }
  }
  if (problems.length > 0) {
    const more = problems.length > MAX_LISTED
      ? ` (and ${problems.length - MAX_LISTED} more problems)`
      : "";
    throw new LoraMismatchError(problems.slice(0, MAX_LISTED).join("; ") + more);
  }
  return { scale: config.scale, patches };
}

/** The adapter names its base model: it must be this one (or a same-name mirror of it). */
function checkBaseModel(base: string | undefined, model: { id: string; repo: string }): void {
  // A local path or a bare name cannot be compared; the shape checks still apply.
  if (!base || !/^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/.test(base)) return;
  const name = (s: string) => s.split("/").pop()!.toLowerCase();
  const same = [model.id, model.repo].some((m) =>
    m.toLowerCase() === base.toLowerCase() || name(m) === name(base)
  );
  if (!same) {
    throw new LoraMismatchError(
      `the adapter was trained on base model '${base}', not on '${model.id}'` +
        (model.repo !== model.id ? ` (repository ${model.repo})` : ""),
    );
  }
}

/** lora_A / lora_B tensor names by module path; any other tensor is refused by name. */
function loraModules(
  tensors: ReadonlyMap<string, TensorInfo>,
): Map<string, { a?: string; b?: string }> {
  const modules = new Map<string, { a?: string; b?: string }>();
  const unknown: string[] = [];
  for (const name of tensors.keys()) {
    const m = KEY_RE.exec(name.startsWith(PREFIX) ? name.slice(PREFIX.length) : name);
    if (!m) {
      unknown.push(name);
      continue;
    }
    const entry = modules.get(m[1]) ?? {};
    if (m[2] === "A") entry.a = name;
    else entry.b = name;
    modules.set(m[1], entry);
  }
  if (unknown.length > 0) {
    const embedding = unknown.some((n) => n.includes("lora_embedding_"));
    throw new LoraMismatchError(
      `adapter_model.safetensors holds tensors that are not LoRA A/B weights of linear layers: ` +
        unknown.slice(0, MAX_LISTED).join(", ") +
        (embedding ? " (LoRA on embedding layers is not supported)" : ""),
    );
  }
  if (modules.size === 0) {
    throw new LoraMismatchError("adapter_model.safetensors holds no LoRA weights");
  }
  return modules;
}

/** A module path matches a target name when the name is its last dotted part(s). */
function endsWithParts(path: string, suffix: string): boolean {
  return path === suffix || path.endsWith("." + suffix);
}

/**
 * With a list of target modules, every adapted module must be one of them and every name must
 * have weights. (A regular expression is not evaluated: the saved weights say which modules it
 * matched, and running a client-chosen pattern could hang the thread.)
 */
function checkTargetModules(config: LoraConfig, modules: string[], problems: string[]): void {
  const targets = config.targetModules;
  if (!Array.isArray(targets)) return;
  for (const m of modules) {
    if (!targets.some((t) => endsWithParts(m, t))) {
      problems.push(`module ${m} is not in target_modules [${targets.join(", ")}]`);
    }
  }
  for (const t of targets) {
    if (!modules.some((m) => endsWithParts(m, t))) {
      problems.push(`target module '${t}' has no weights in adapter_model.safetensors`);
    }
  }
}

function groupTargets(targets: readonly LinearTarget[]): Map<string, LinearTarget[]> {
  const byPath = new Map<string, LinearTarget[]>();
  for (const t of targets) {
    const list = byPath.get(t.module) ?? [];
    if (!list.some((x) => x.initializer === t.initializer)) list.push(t);
    byPath.set(t.module, list);
  }
  return byPath;
}

/** The graph weights of an adapter module: exact path, else one path matching at the end. */
function matchModule(
  module: string,
  byPath: Map<string, LinearTarget[]>,
  problems: string[],
): LinearTarget[] | undefined {
  const exact = byPath.get(module);
  if (exact) return exact;
  const paths = [...byPath.keys()].filter((p) =>
    endsWithParts(p, module) || endsWithParts(module, p)
  );
  if (paths.length === 1) return byPath.get(paths[0]);
  if (paths.length > 1) {
    problems.push(
      `module ${module} is ambiguous in the graph: ${paths.slice(0, MAX_LISTED).join(", ")}`,
    );
    return undefined;
  }
  const known = [...byPath.keys()];
  const hint = known.length === 0
    ? "the graph has no linear layer with a known module path"
    : `graph modules look like ${known.slice(0, 2).join(", ")}`;
  problems.push(`unknown target module ${module}: no MatMul/Gemm weight for it (${hint})`);
  return undefined;
}

/** Check A `[r, in]`, B `[out, r]` against the configuration and the graph weight. */
function checkShapes(
  module: string,
  pair: { a?: string; b?: string },
  target: LinearTarget,
  tensors: ReadonlyMap<string, TensorInfo>,
  config: LoraConfig,
  problems: string[],
): WeightPatch | undefined {
  if (!pair.a || !pair.b) {
    problems.push(
      `module ${module} has lora_${pair.a ? "A" : "B"} but no lora_${pair.a ? "B" : "A"}`,
    );
    return undefined;
  }
  const a = tensors.get(pair.a)!;
  const b = tensors.get(pair.b)!;
  const weight =
    `graph weight ${target.initializer} [${target.layout === "in_out" ? "in, out" : "out, in"}` +
    ` = ${target.layout === "in_out" ? target.inFeatures : target.outFeatures}, ` +
    `${
      target.layout === "in_out" ? target.outFeatures : target.inFeatures
    }] of node ${target.node}`;
  const before = problems.length;
  for (const [label, t] of [["lora_A", a], ["lora_B", b]] as const) {
    if (!isFloatDtype(t.dtype)) {
      problems.push(`module ${module}: ${label} is ${t.dtype}, not float`);
    }
    if (t.shape.length !== 2) {
      problems.push(`module ${module}: ${label} has shape [${t.shape}], expected a matrix`);
    }
  }
  if (problems.length > before) return undefined;
  const [rank, inA] = a.shape;
  const [outB, rankB] = b.shape;
  if (rank !== config.r || rankB !== config.r) {
    problems.push(
      `module ${module}: rank shapes lora_A [${a.shape}] and lora_B [${b.shape}] do not match ` +
        `r = ${config.r}`,
    );
  }
  if (inA !== target.inFeatures) {
    problems.push(
      `module ${module}: lora_A is [${a.shape}] (${inA} inputs) but the base layer takes ` +
        `${target.inFeatures} inputs (${weight})`,
    );
  }
  if (outB !== target.outFeatures) {
    problems.push(
      `module ${module}: lora_B is [${b.shape}] (${outB} outputs) but the base layer gives ` +
        `${target.outFeatures} outputs (${weight})`,
    );
  }
  if (!["float32", "float16", "bfloat16"].includes(target.dataType)) {
    problems.push(
      `module ${module}: ${weight} is ${target.dataType} (quantised); LoRA needs float weights`,
    );
  }
  if (target.external) {
    problems.push(`module ${module}: ${weight} is stored in external data, which is not supported`);
  }
  if (problems.length > before) return undefined;
  return {
    module,
    initializer: target.initializer,
    layout: target.layout,
    inFeatures: target.inFeatures,
    outFeatures: target.outFeatures,
    rank,
    a: pair.a,
    b: pair.b,
  };
}
