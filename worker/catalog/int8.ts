/**
 * Quantised graphs on CPU workers: which families a load probe can check (so may run one), and
 * what `/v1/models/{m}` says about a model's graph (checked, not checked, or float and why).
 * The probe itself runs in the inference thread (inference/int8_probe.ts).
 */
import { FAMILIES, type Family, type Int8Plan, type ModelConfig } from "@svc/shared/catalog/schema";
import { FAMILY_INFOS } from "../families/infos.ts";
import type { QuantizationInfo, QuantizationProbe } from "@svc/shared/schemas/models";

/**
 * Families whose outputs the probe compares (each family's `info.ts` says): embeddings (cosine)
 * and reranker scores. Extract families answer spans and labels, and CLIP's image graph takes
 * images, which a fixed text probe cannot check: on CPU they run their float graph.
 */
export const PROBED_FAMILIES: ReadonlySet<Family> = new Set(
  FAMILIES.filter((f) => FAMILY_INFOS[f].int8Probe),
);

/** Graph names that say "quantised" (what hub exports call their int8 variants). */
const QUANTISED_NAME = /(^|[/_.-])(quantized|quantised|int8|uint8|qint8|quint8|q8)([_.-]|$)/i;

/** True when a graph's file name says it is quantised (`model_quantized.onnx`, `model_int8.onnx`). */
export function isQuantizedGraph(path: string): boolean {
  const name = path.slice(path.lastIndexOf("/") + 1);
  return name.endsWith(".onnx") && QUANTISED_NAME.test(name.slice(0, -".onnx".length));
}

/**
 * The CPU plan of an entry whose `files` get `over` (its `device_files.cpu`) in place, when that
 * puts a quantised graph (by its name) in place of the float one: the float files the quantised
 * graph is checked against, or why the float ones run untouched.
 */
export function int8PlanFor(
  config: ModelConfig,
  over: Record<string, string>,
): Int8Plan | undefined {
  const graph = over.model;
  if (graph === undefined || graph === config.files.model || !isQuantizedGraph(graph)) {
    return undefined;
  }
  const float_files: Record<string, string> = {};
  for (const role of new Set([...Object.keys(over), "model_data"])) {
    if (config.files[role] !== undefined) float_files[role] = config.files[role];
  }
  if (PROBED_FAMILIES.has(config.family)) return { graph, float_files };
  return {
    graph,
    float_files,
    skipped: `the load probe compares embeddings and scores, not ${config.family} outputs: ` +
      `the float graph ${config.files.model} runs`,
  };
}

/** What the inference thread reports after probing a quantised graph against its float one. */
export interface Int8Verdict {
  /** True: the quantised graph runs; false: the float one does. */
  accepted: boolean;
  /** Absent when the probe could not run (`error` says why; the quantised graph then runs). */
  probe?: QuantizationProbe;
  error?: string;
  /** Time the probe took, float session included (ms). */
  ms: number;
}

/** The probe's measure in words: `mean cosine 0.9996 ≥ 0.99 over 8 texts`. */
export function probeText(p: QuantizationProbe): string {
  const cmp = `${p.value.toFixed(4)} ${p.value >= p.threshold ? "≥" : "<"} ${p.threshold}`;
  return p.metric === "mean_cosine"
    ? `mean cosine ${cmp} over ${p.inputs} texts`
    : `score correlation ${cmp} over ${p.inputs} query/document pairs`;
}

/**
 * ModelInfo `quantization` of the graph a unit runs: from the load probe's verdict once loaded,
 * from the plan before; undefined when no quantised graph is involved.
 */
export function quantizationInfo(
  config: ModelConfig,
  modelFile: string,
  verdict?: Int8Verdict,
): QuantizationInfo | undefined {
  const plan = config.int8;
  if (plan && modelFile === config.files.model) {
    const float_graph = plan.float_files.model;
    if (plan.skipped) {
      return {
        graph: plan.graph,
        float_graph,
        serving: "float",
        checked: false,
        reason: plan.skipped,
      };
    }
    if (!verdict) {
      return {
        graph: plan.graph,
        float_graph,
        serving: "quantized",
        checked: false,
        reason: `checked against ${float_graph} when the model loads on this worker`,
      };
    }
    if (!verdict.probe) {
      return {
        graph: plan.graph,
        float_graph,
        serving: "quantized",
        checked: false,
        reason: `its quality was not checked: the load probe failed (${verdict.error})`,
      };
    }
    const measured = probeText(verdict.probe);
    return {
      graph: plan.graph,
      float_graph,
      serving: verdict.accepted ? "quantized" : "float",
      checked: true,
      probe: verdict.probe,
      reason: verdict.accepted
        ? `agrees with ${float_graph} on this CPU: ${measured}`
        : `disagrees with ${float_graph} on this CPU (${measured}): the float graph runs`,
    };
  }
  if (!isQuantizedGraph(modelFile)) return undefined;
  return {
    graph: modelFile,
    serving: "quantized",
    checked: false,
    reason: modelFile === config.files.model
      ? "no float graph beside it to compare with: its quality was not checked"
      : "a profile's own graph (model_file), run as asked: its quality was not checked",
  };
}

/** The files a unit runs after the probe: the float ones in place when it refused the int8 graph. */
export function servedFiles(
  config: ModelConfig,
  verdict: Int8Verdict | undefined,
): Record<string, string> {
  if (!config.int8 || !verdict || verdict.accepted || !verdict.probe) return config.files;
  const files = { ...config.files, ...config.int8.float_files };
  if (!config.int8.float_files.model_data) delete files.model_data;
  return files;
}
