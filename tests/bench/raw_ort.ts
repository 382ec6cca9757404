/**
 * The baseline: onnxruntime-node in this process, on the worker's model file, with the worker's
 * session options. Only `session.run` is timed (tensors are built beforehand), so this is the
 * ceiling that the server's HTTP, queueing, threading and tokenising overheads are measured against.
 */
import ort from "onnxruntime-node";
import { fixtureTokenizer } from "../fixtures/testing.ts";
import type { BenchText } from "./texts.ts";
import { planBatches } from "./batching.ts";
import { disableOrtTelemetry } from "../../worker/inference/ort_telemetry.ts";

// Off before any session exists (see ort_telemetry.ts).
disableOrtTelemetry();

/** An open baseline session. */
export interface RawModel {
  session: ort.InferenceSession;
  inputNames: readonly string[];
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

/** Open the model as the worker does (graph optimisation "all", same intra-op thread setting). */
export async function openRawModel(path: string, intraOpThreads: number): Promise<RawModel> {
  const opts: ort.InferenceSession.SessionOptions = { graphOptimizationLevel: "all" };
  if (intraOpThreads > 0) opts.intraOpNumThreads = intraOpThreads;
  const session = await ort.InferenceSession.create(path, opts);
  return { session, inputNames: session.inputNames };
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
