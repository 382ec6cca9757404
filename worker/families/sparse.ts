/** SPLADE sparse family: masked-LM logits → log(1+ReLU) max-pooled over tokens, non-zeros only. */
import type {
  AdapterContext,
  ItemOutput,
  ModelAdapter,
  RunResult,
  WorkItem,
  WorkParams,
} from "./types.ts";
import { loadTextTokenizer, type TextTokenizer } from "./text/tokenizer.ts";
import { padTokens } from "./text/tensors.ts";
import { type ModelSession, openSession, outputF32, runTimed, tokenFeeds } from "./onnx_session.ts";
import { prepareText, type TextItem } from "./text/prepare.ts";

/** Build the SPLADE adapter. */
export async function createSparseAdapter(ctx: AdapterContext): Promise<ModelAdapter<TextItem>> {
  const tokenizer = await loadTextTokenizer(ctx.files, ctx.config.max_sequence_length);
  const session = await openSession(ctx.files.model, ctx.executionProviders, ctx.intraOpThreads);
  return new SparseAdapter(tokenizer, session);
}

/** SPLADE weights of one row: max over attended tokens of log(1 + relu(logit)). */
export function spladeRow(
  logits: Float32Array,
  mask: BigInt64Array,
  b: number,
  seq: number,
  vocab: number,
): { indices: Int32Array; values: Float32Array } {
  const best = new Float32Array(vocab);
  for (let t = 0; t < seq; t++) {
    if (mask[b * seq + t] === 0n) continue;
    const base = (b * seq + t) * vocab;
    for (let v = 0; v < vocab; v++) {
      const x = logits[base + v];
      if (x > best[v]) best[v] = x;
    }
  }
  // log1p is monotonic, so max-then-log equals log-then-max and costs vocab calls, not seq·vocab.
  let nnz = 0;
  for (let v = 0; v < vocab; v++) if (best[v] > 0) nnz++;
  const indices = new Int32Array(nnz);
  const values = new Float32Array(nnz);
  let k = 0;
  for (let v = 0; v < vocab; v++) {
    if (best[v] > 0) {
      indices[k] = v;
      values[k++] = Math.log1p(best[v]);
    }
  }
  return { indices, values };
}

class SparseAdapter implements ModelAdapter<TextItem> {
  constructor(private readonly tokenizer: TextTokenizer, private readonly ms: ModelSession) {}

  prepare(item: WorkItem, index: number, params: WorkParams): TextItem {
    return prepareText(this.tokenizer, item, index, params, this.tokenizer.vocabSize);
  }

  async run(group: TextItem[]): Promise<RunResult> {
    const t = padTokens(group);
    const { out, ms } = await runTimed(this.ms, tokenFeeds(this.ms, t));
    const t0 = performance.now();
    const { data, dims } = outputF32(out, ["logits", "output"]);
    const vocab = dims[2];
    const outputs: ItemOutput[] = group.map((item, b) => ({
      sparse: { ...spladeRow(data, t.attentionMask, b, t.seq, vocab), dims: vocab },
      tokens: item.length,
    }));
    return { outputs, inferenceMs: ms, postprocessingMs: performance.now() - t0 };
  }

  async dispose(): Promise<void> {
    await this.ms.session.release();
  }
}
