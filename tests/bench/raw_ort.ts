/**
 * The baseline: onnxruntime-node in this process, on the worker's model file, at the intra-op
 * thread count that runs it fastest here (not the worker's setting: the ceiling must be the best
 * raw configuration). Only `session.run` is timed (tensors are built beforehand), so this is the
 * ceiling that the server's HTTP, queueing, threading and tokenising overheads are measured against.
 */
import ort from "onnxruntime-node";
import { fixtureTokenizer } from "../fixtures/testing.ts";
import type { BenchText } from "./texts.ts";
import { planBatches } from "./batching.ts";
import { disableOrtTelemetry } from "#worker/inference/ort_telemetry.ts";
import { sessionOptions } from "#worker/families/onnx_session.ts";

// Off before any session exists (see ort_telemetry.ts).
disableOrtTelemetry();

/** An open baseline session. */
export interface RawModel {
  session: ort.InferenceSession;
  inputNames: readonly string[];
  /** Intra-op threads it was opened with (0: onnxruntime's own default). */
  threads: number;
}

/** Throughput of one baseline pass. */
export interface RawThroughput {
  tokens: number;
  items: number;
  batches: number;
  elapsedMs: number;
  tokensPerS: number;
  itemsPerS: number;
}

/**
 * Open the model with the worker's session options (graph optimisation "all", and on x86-64
 * `session.x64quantprecision`, which the int8 line's speed depends on); threads 0 = ORT's default.
 */
export async function openRawModel(path: string, intraOpThreads: number): Promise<RawModel> {
  const session = await ort.InferenceSession.create(path, sessionOptions(["cpu"], intraOpThreads));
  return { session, inputNames: session.inputNames, threads: intraOpThreads };
}

/** Thread counts worth trying: ORT's default, 1, powers of two and the CPU count itself. */
export function threadCandidates(cpus: number): number[] {
  const out = new Set<number>([0, 1, cpus]);
  for (let n = 2; n < cpus; n *= 2) out.add(n);
  return [...out].sort((a, b) => a - b);
}

/** Open the model once per candidate thread count (see {@link threadCandidates}). */
export async function openRawCandidates(
  path: string,
  cpus: number = navigator.hardwareConcurrency,
): Promise<RawModel[]> {
  const out: RawModel[] = [];
  for (const t of threadCandidates(cpus)) out.push(await openRawModel(path, t));
  return out;
}

/**
 * The candidates worth timing in every round: within `keep` of the fastest at warm-up (a thread
 * count at half the speed of the best never wins a round and would only lengthen it).
 */
export function contenders(
  models: readonly RawModel[],
  tokensPerSByThreads: Record<string, number>,
  keep = 0.75,
): RawModel[] {
  const best = Math.max(...Object.values(tokensPerSByThreads));
  return models.filter((m) => (tokensPerSByThreads[String(m.threads)] ?? 0) >= keep * best);
}

/** The fastest candidate of one pass over the same texts, and every candidate's result. */
export interface BestRaw {
  best: RawModel;
  result: RawThroughput;
  /** Tokens/s by thread count ("0" = onnxruntime's default). */
  tokensPerSByThreads: Record<string, number>;
}

/**
 * Run every candidate over `ids` (in reverse order when `reverse`, so drift favours none) and
 * keep the fastest: the raw ceiling is the best raw configuration of this moment, which a busy
 * shared machine can change from one round to the next.
 */
export async function bestRawThroughput(
  models: readonly RawModel[],
  ids: readonly number[][],
  paddedBudget: number,
  reverse = false,
): Promise<BestRaw> {
  const results: RawThroughput[] = new Array(models.length);
  const order = [...models.keys()];
  for (const i of reverse ? order.reverse() : order) {
    results[i] = await rawThroughput(models[i], ids, paddedBudget);
  }
  let bi = 0;
  results.forEach((r, i) => {
    if (r.tokensPerS > results[bi].tokensPerS) bi = i;
  });
  return {
    best: models[bi],
    result: results[bi],
    tokensPerSByThreads: Object.fromEntries(
      models.map((m, i) => [String(m.threads), results[i].tokensPerS]),
    ),
  };
}

/** Token ids of each text through the fixture tokenizer, special tokens included. */
export function tokenize(texts: readonly BenchText[]): number[][] {
  const tok = fixtureTokenizer();
  return texts.map((t) => tok.encode(t.text).ids);
}

/** Padded int64 feeds for rows of token ids, limited to the inputs the graph declares. */
export function buildFeeds(
  model: RawModel,
  rows: readonly (readonly number[])[],
): Record<string, ort.Tensor> {
  const batch = rows.length;
  const seq = rows.reduce((m, r) => Math.max(m, r.length), 1);
  const ids = new BigInt64Array(batch * seq);
  const mask = new BigInt64Array(batch * seq);
  rows.forEach((r, b) => {
    for (let t = 0; t < r.length; t++) {
      ids[b * seq + t] = BigInt(r[t]);
      mask[b * seq + t] = 1n;
    }
  });
  const all: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor("int64", ids, [batch, seq]),
    attention_mask: new ort.Tensor("int64", mask, [batch, seq]),
    token_type_ids: new ort.Tensor("int64", new BigInt64Array(batch * seq), [batch, seq]),
  };
  return Object.fromEntries(model.inputNames.map((n) => [n, all[n]]));
}

/** Run every text once, sorted by length in batches of at most `paddedBudget` padded tokens. */
export async function rawThroughput(
  model: RawModel,
  ids: readonly number[][],
  paddedBudget: number,
): Promise<RawThroughput> {
  const plan = planBatches(ids.map((r) => r.length), paddedBudget);
  const feeds = plan.map((b) => buildFeeds(model, b.indexes.map((i) => ids[i])));
  const t0 = performance.now();
  for (const f of feeds) await model.session.run(f);
  const elapsedMs = performance.now() - t0;
  const tokens = ids.reduce((s, r) => s + r.length, 0);
  return {
    tokens,
    items: ids.length,
    batches: plan.length,
    elapsedMs,
    tokensPerS: tokens / (elapsedMs / 1000),
    itemsPerS: ids.length / (elapsedMs / 1000),
  };
}

/** Latencies (ms) of `n` single-item runs of one input. */
export async function rawSingleLatencies(
  model: RawModel,
  ids: readonly number[],
  n: number,
): Promise<number[]> {
  const feeds = buildFeeds(model, [ids]);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await model.session.run(feeds);
    out.push(performance.now() - t0);
  }
  return out;
}
