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

/** Open the model as the worker does (graph optimisation "all"); threads 0 = ORT's default. */
export async function openRawModel(path: string, intraOpThreads: number): Promise<RawModel> {
  const opts: ort.InferenceSession.SessionOptions = { graphOptimizationLevel: "all" };
  if (intraOpThreads > 0) opts.intraOpNumThreads = intraOpThreads;
  const session = await ort.InferenceSession.create(path, opts);
  return { session, inputNames: session.inputNames, threads: intraOpThreads };
}

/** Thread counts worth trying: ORT's default, 1, powers of two and the CPU count itself. */
export function threadCandidates(cpus: number): number[] {
  const out = new Set<number>([0, 1, cpus]);
  for (let n = 2; n < cpus; n *= 2) out.add(n);
  return [...out].sort((a, b) => a - b);
}

/** The best raw configuration and what every tried thread count gave (tokens/s; key 0 = default). */
export interface BestRaw {
  model: RawModel;
  tokensPerSByThreads: Record<string, number>;
}

/**
 * Open the model at every candidate thread count, time `rounds` passes over `ids` each (the
 * first pass of each warms up, candidates interleaved so drift favours none) and keep the fastest
 * session; the others are released.
 */
export async function openBestRawModel(
  path: string,
  ids: readonly number[][],
  paddedBudget: number,
  cpus: number = navigator.hardwareConcurrency,
  rounds = 2,
): Promise<BestRaw> {
  const models: RawModel[] = [];
  for (const t of threadCandidates(cpus)) models.push(await openRawModel(path, t));
  for (const m of models) await rawThroughput(m, ids, paddedBudget);
  const speeds = models.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? models.keys() : [...models.keys()].reverse();
    for (const i of order) {
      speeds[i].push((await rawThroughput(models[i], ids, paddedBudget)).tokensPerS);
    }
  }
  const best = speeds.map((s) => Math.max(...s));
  const bi = best.indexOf(Math.max(...best));
  for (const [i, m] of models.entries()) if (i !== bi) await m.session.release().catch(() => {});
  return {
    model: models[bi],
    tokensPerSByThreads: Object.fromEntries(models.map((m, i) => [String(m.threads), best[i]])),
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
