/**
 * Runs one batch inside the inference thread: tokenise every item, sort by length, split into
 * sub-batches whose padded size fits the token budget, run them, put results back in order. Items
 * whose client went away (flagged in `abandoned` by the main thread, even while the batch runs)
 * are not tokenised and are dropped from every run not yet started, and so are the items of a
 * request one of whose items was refused while tokenising (over a work bound, a bad label): that
 * request is answered 400 before anything of it runs. An output holding NaN or an infinity becomes
 * that item's INFERENCE_ERROR (a 500 naming the model), never an answer.
 */
import type {
  ItemOutput,
  ModelAdapter,
  PreparedItem,
  RunControl,
  WorkItem,
  WorkParams,
} from "../families/types.ts";
import type { BatchTiming } from "./protocol.ts";
import { planSubBatches } from "../scheduler/sub_batches.ts";
import { nonFiniteOutput, NonFiniteOutputError } from "../families/finite.ts";

/** Result of one driven batch. */
export interface DrivenBatch {
  outputs: ItemOutput[];
  timing: BatchTiming;
  paddedTokens: number;
}

/** What a batch may come with besides its items. */
export interface DriveOptions {
  /** The model's name in error messages. */
  model?: string;
  /**
   * Each item's request (see BatchRunner): the items of a request with an item refused while
   * tokenising are not run (the request is answered with that refusal).
   */
  requestOf?: readonly number[];
}

/** Tokenise, sub-batch, run and reassemble one batch; abandoned items keep no output. */
export async function driveBatch(
  adapter: ModelAdapter,
  items: WorkItem[],
  params: WorkParams,
  tokenBudget: number,
  abandoned?: Int32Array,
  opts: DriveOptions = {},
): Promise<DrivenBatch> {
  const { model = "the model", requestOf } = opts;
  const refusedRequests = new Set<number>();
  const gone = (i: number) =>
    (abandoned !== undefined && Atomics.load(abandoned, i) !== 0) ||
    (requestOf !== undefined && refusedRequests.has(requestOf[i]));
  const control: RunControl = { gone };
  const t0 = performance.now();
  const outputs: ItemOutput[] = new Array(items.length);
  const prepared: PreparedItem[] = [];
  items.forEach((it, i) => {
    if (gone(i)) return;
    const p = adapter.prepare(it, i, params);
    if (!p.error) {
      prepared.push(p);
      return;
    }
    outputs[i] = { tokens: 0, error: p.error };
    if (requestOf) refusedRequests.add(requestOf[i]);
  });
  const tokenizationMs = performance.now() - t0;
  // Items of a request refused after they were tokenised go too.
  const runnable = prepared.filter((p) => !gone(p.index));
  runnable.sort((a, b) => a.length - b.length);
  let inferenceMs = 0;
  let postprocessingMs = 0;
  let paddedTokens = 0;
  const who = params.lora === undefined
    ? `model '${model}'`
    : `model '${model}' with LoRA adapter '${params.lora}'`;
  const refused = (p: PreparedItem, output: string): ItemOutput => ({
    tokens: p.length,
    error: {
      code: "INFERENCE_ERROR",
      message: `${who} produced non-finite values (NaN or infinity) in its ${output}`,
    },
  });
  for (const planned of planSubBatches(runnable, tokenBudget)) {
    const group = planned.filter((p) => !gone(p.index));
    if (group.length === 0) continue;
    paddedTokens += group.length * group[group.length - 1].length;
    let r;
    try {
      // Each ONNX run inside holds the compute gate by itself (families/onnx_session.ts).
      r = await adapter.run(group, params, control);
    } catch (err) {
      // Raw logits a family checks: the run's items all came out of it.
      if (!(err instanceof NonFiniteOutputError)) throw err;
      for (const p of group) outputs[p.index] = refused(p, err.output);
      continue;
    }
    inferenceMs += r.inferenceMs;
    postprocessingMs += r.postprocessingMs;
    group.forEach((p, k) => {
      const out = r.outputs[k];
      const bad = out && !out.error ? nonFiniteOutput(out) : undefined;
      outputs[p.index] = bad === undefined ? out : refused(p, bad);
      if (p.truncated && bad === undefined && out) out.truncated = true;
    });
  }
  return { outputs, timing: { tokenizationMs, inferenceMs, postprocessingMs }, paddedTokens };
}

/** Every distinct ArrayBuffer behind the outputs' typed arrays (to transfer, not copy). */
export function transferables(outputs: ItemOutput[]): ArrayBuffer[] {
  const seen = new Set<ArrayBuffer>();
  const add = (a: ArrayBufferView | undefined) => {
    if (a && a.buffer instanceof ArrayBuffer) seen.add(a.buffer);
  };
  for (const o of outputs) {
    if (!o) continue;
    add(o.dense);
    add(o.sparse?.indices);
    add(o.sparse?.values);
    add(o.multivector?.values);
  }
  return [...seen];
}
