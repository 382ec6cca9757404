/** Shape of docs/bench/results.json: machine, settings, the five targets, every scenario. */
import type { Sample } from "./samples.ts";

/** Version of the results shape; bump when a field changes meaning. */
export const RESULTS_SCHEMA = 1;

/** How a target value is compared with its bound. */
export type Comparison = ">=" | "<=" | "<";

/** One performance target (docs/bench/README.md) and its measured value. */
export interface TargetResult {
  id: string;
  label: string;
  unit: "ratio" | "ms" | "share";
  comparison: Comparison;
  target: number;
  /** Median over rounds (or the pooled value, see `note`); null when not measured. */
  value: number | null;
  /** One value per round. */
  perRound: number[];
  pass: boolean | null;
  note?: string;
}

/** Median figures of one scenario. */
export interface ScenarioSummary {
  requestsPerS: number | null;
  tokensPerS: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
}

/** One scenario: what it is, its medians, and every round's sample. */
export interface ScenarioResult {
  id: string;
  description: string;
  measured: boolean;
  note?: string;
  median: ScenarioSummary;
  rounds: Sample[];
}

/** The intra-op thread counts in play: the worker's own choice and the baseline's fastest. */
export interface ThreadChoice {
  /** What the worker at its defaults chose (svc_compute_threads). */
  worker: number;
  /** The raw ceiling's thread count that won most rounds (0 = onnxruntime's default). */
  raw: number;
  /** The fastest thread count in each round (each round's ceiling is its fastest candidate). */
  rawThreadsPerRound: number[];
  /** Warm-up tokens/s of the baseline per thread count tried. */
  rawTokensPerSByThreads: Record<string, number>;
}

/** Facts about the machine and software that produced the numbers. */
export interface MachineInfo {
  cores: number;
  cpuModel: string;
  os: string;
  deno: string;
  v8: string;
  onnxruntimeNode: string;
  /** 1/5/15-minute load averages at the start and end: context for noisy numbers. */
  loadAvgStart: number[];
  loadAvgEnd: number[];
  /** Intra-op threads of the worker (its default) and of the raw ceiling. */
  threads: ThreadChoice;
}

/** The whole results file. */
export interface BenchResults {
  schema: number;
  date: string;
  quick: boolean;
  durationS: number;
  machine: MachineInfo;
  settings: Record<string, unknown>;
  targets: TargetResult[];
  scenarios: ScenarioResult[];
  /** Figures that explain the targets (batch sizes, padding shares, overhead splits). */
  diagnostics: Record<string, number | null>;
}

/** True when `value` meets `target` under `comparison`. */
export function meets(value: number, comparison: Comparison, target: number): boolean {
  if (comparison === ">=") return value >= target;
  if (comparison === "<=") return value <= target;
  return value < target;
}
