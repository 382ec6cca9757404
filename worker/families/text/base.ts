/**
 * Shared skeleton of single-text families (dense, static, sparse, ColBERT): load tokenizer and
 * session, tokenise one item, pad a group, run the graph, hand the raw output to the family.
 */
import type ort from "onnxruntime-node";
import type {
  AdapterContext,
  ItemOutput,
  ModelAdapter,
  RunResult,
  WorkItem,
  WorkParams,
} from "../types.ts";
import { loadTextTokenizer, type TextTokenizer } from "./tokenizer.ts";
import { padTokens, type TokenTensors } from "./tensors.ts";
import { type ModelSession, openSession, runTimed, tokenFeeds } from "../onnx_session.ts";
import { prepareText, type TextItem } from "./prepare.ts";

/** The tokenizer and session every text family starts from. */
export interface TextModel {
  tokenizer: TextTokenizer;
  session: ModelSession;
}

/** Load a text model's tokenizer and ONNX session. */
export async function loadTextModel(ctx: AdapterContext): Promise<TextModel> {
  const tokenizer = await loadTextTokenizer(
    ctx.files,
    ctx.config.max_sequence_length,
    ctx.jsonBounds,
  );
  const session = await openSession(
    ctx.modelBytes ?? ctx.files.model,
    ctx.executionProviders,
    ctx.intraOpThreads,
  );
  return { tokenizer, session };
}

/** Base adapter: subclasses say how raw outputs become item outputs (and may re-tokenise). */
export abstract class TextAdapter<P extends TextItem = TextItem> implements ModelAdapter<P> {
  constructor(protected readonly model: TextModel) {}

  /** Tokenise one item with the model's template and truncation. */
  prepare(item: WorkItem, index: number, params: WorkParams): P {
    const tok = this.model.tokenizer;
    return prepareText(tok, item, index, params, tok.vocabSize) as P;
  }

  /** Turn the graph's outputs for `group` into one output per item. */
  protected abstract postprocess(
    group: P[],
    out: ort.InferenceSession.ReturnType,
    t: TokenTensors,
    params?: WorkParams,
  ): ItemOutput[];

  async run(group: P[], params?: WorkParams): Promise<RunResult> {
    const t = padTokens(group);
    const { out, ms } = await runTimed(this.model.session, tokenFeeds(this.model.session, t));
    const t0 = performance.now();
    const outputs = this.postprocess(group, out, t, params);
    return { outputs, inferenceMs: ms, postprocessingMs: performance.now() - t0 };
  }

  async dispose(): Promise<void> {
    await this.model.session.session.release();
  }
}
