/** ONNX Runtime sessions for adapters: execution providers, threads, and feeding only declared inputs. */
import type { ComputeGate } from "../inference/compute_budget.ts";
import ort from "onnxruntime-node";
import type { TokenTensors } from "./text/tensors.ts";
import { disableOrtTelemetry } from "../inference/ort_telemetry.ts";

// Off before any session exists (see ort_telemetry.ts).
disableOrtTelemetry();

/** A created session with its declared input and output names. */
export interface ModelSession {
  session: ort.InferenceSession;
  inputNames: readonly string[];
  outputNames: readonly string[];
}

/**
 * The options every session is created with. On x86-64, `session.x64quantprecision`: without it,
 * CPUs without VNNI run int8 MatMuls through AVX2's `vpmaddubsw`, whose int16 pair sums saturate
 * on weights quantised over the full ±127 range (hub exports often are; cosine 0.97 to the float
 * graph measured); with it ONNX Runtime takes a kernel that does not (0.99996). VNNI CPUs and
 * float graphs are unaffected.
 */
export function sessionOptions(
  executionProviders: string[],
  intraOpThreads: number,
  arch: string = Deno.build.arch,
): ort.InferenceSession.SessionOptions {
  const opts: ort.InferenceSession.SessionOptions = {
    executionProviders: executionProviders.map((p) => p === "cuda" ? { name: "cuda" } : p),
    graphOptimizationLevel: "all",
  };
  if (intraOpThreads > 0) opts.intraOpNumThreads = intraOpThreads;
  // The Node binding turns nested keys into `session.x64quantprecision` (AddConfigEntry).
  if (arch === "x86_64") opts.extra = { session: { x64quantprecision: "1" } };
  return opts;
}

/**
 * Create a session from a file (or a model built in memory, such as one with a LoRA adapter
 * merged); `cuda` in the providers is tried first when asked for.
 */
export async function openSession(
  path: string | Uint8Array,
  executionProviders: string[],
  intraOpThreads: number,
): Promise<ModelSession> {
  const opts = sessionOptions(executionProviders, intraOpThreads);
  const session = typeof path === "string"
    ? await ort.InferenceSession.create(path, opts)
    : await ort.InferenceSession.create(path, opts);
  return { session, inputNames: session.inputNames, outputNames: session.outputNames };
}

/** Feeds for BERT-style inputs, limited to the names the graph declares (exports differ). */
export function tokenFeeds(ms: ModelSession, t: TokenTensors): Record<string, ort.Tensor> {
  const dims = [t.batch, t.seq];
  const all: Record<string, () => ort.Tensor> = {
    input_ids: () => new ort.Tensor("int64", t.inputIds, dims),
    attention_mask: () => new ort.Tensor("int64", t.attentionMask, dims),
    token_type_ids: () => new ort.Tensor("int64", t.tokenTypeIds, dims),
  };
  const feeds: Record<string, ort.Tensor> = {};
  for (const name of ms.inputNames) {
    const make = all[name];
    if (!make) throw new Error(`model input '${name}' is not a token input this family provides`);
    feeds[name] = make();
  }
  return feeds;
}

/**
 * The worker's compute gate as this inference thread holds it (compute_budget.ts): set once the
 * model is loaded; absent on GPU and in tests that run an adapter alone.
 */
let runGate: ComputeGate | undefined;

/** Make every ONNX run of this thread hold `gate` (undefined: run freely). */
export function setRunGate(gate: ComputeGate | undefined): void {
  runGate = gate;
}

/**
 * Run and time a session; returns outputs and elapsed milliseconds (the run alone, not the wait
 * for the gate). Each run holds the compute gate by itself, never a family's whole batch: a
 * family that reads an item in many runs (GLiNER's windows × prompts) lets the other models'
 * runs in between its own, so one heavy request cannot keep them waiting for its whole length.
 */
export async function runTimed(
  ms: ModelSession,
  feeds: Record<string, ort.Tensor>,
): Promise<{ out: ort.InferenceSession.ReturnType; ms: number }> {
  const run = async () => {
    const t0 = performance.now();
    const out = await ms.session.run(feeds);
    return { out, ms: performance.now() - t0 };
  };
  return runGate ? await runGate.hold(run) : await run();
}

/** Float32 data and dims of a named output (first output when the name is absent). */
export function outputF32(
  out: ort.InferenceSession.ReturnType,
  names: readonly string[],
): { data: Float32Array; dims: readonly number[] } {
  const name = names.find((n) => n in out) ?? Object.keys(out)[0];
  const t = out[name];
  if (t.type !== "float32") throw new Error(`output '${name}' is ${t.type}, expected float32`);
  return { data: t.data as Float32Array, dims: t.dims };
}
