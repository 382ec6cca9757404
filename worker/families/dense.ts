/** Dense text encoder family (BERT, XLM-R, Nomic...): pooled, optionally normalised vectors. */
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
import { clsPool, l2Normalize, meanPool } from "./text/pooling.ts";
import { type ModelSession, openSession, outputF32, runTimed, tokenFeeds } from "./onnx_session.ts";
import { prepareText, type TextItem } from "./text/prepare.ts";

/** Build the dense adapter. */
export async function createDenseAdapter(ctx: AdapterContext): Promise<ModelAdapter<TextItem>> {
  const tokenizer = await loadTextTokenizer(ctx.files, ctx.config.max_sequence_length);
  const session = await openSession(ctx.files.model, ctx.executionProviders, ctx.intraOpThreads);
  return new DenseAdapter(ctx, tokenizer, session);
}

class DenseAdapter implements ModelAdapter<TextItem> {
  constructor(
    private readonly ctx: AdapterContext,
    private readonly tokenizer: TextTokenizer,
    private readonly ms: ModelSession,
  ) {}

  prepare(item: WorkItem, index: number, params: WorkParams): TextItem {
    return prepareText(this.tokenizer, item, index, params, this.tokenizer.vocabSize);
  }

  async run(group: TextItem[]): Promise<RunResult> {
    const t = padTokens(group);
    const { out, ms } = await runTimed(this.ms, tokenFeeds(this.ms, t));
    const t0 = performance.now();
    const { data, dims } = outputF32(out, [
      "last_hidden_state",
      "sentence_embedding",
      "embeddings",
    ]);
    const { pooling, normalize } = this.ctx.config;
    const outputs: ItemOutput[] = [];
    for (let b = 0; b < group.length; b++) {
      let v: Float32Array;
      if (dims.length === 2) {
        // Already pooled by the graph (static models, some sentence-transformers exports).
        v = data.slice(b * dims[1], (b + 1) * dims[1]);
      } else {
        const dim = dims[2];
        v = pooling === "cls"
          ? clsPool(data, b, t.seq, dim)
          : meanPool(data, t.attentionMask, b, t.seq, dim);
      }
      if (normalize) l2Normalize(v);
      outputs.push({ dense: v, tokens: group[b].length });
    }
    return { outputs, inferenceMs: ms, postprocessingMs: performance.now() - t0 };
  }

  async dispose(): Promise<void> {
    await this.ms.session.release();
  }
}
