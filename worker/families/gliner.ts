/**
 * GLiNER span NER family: the request's labels are put before the text as a prompt, the model
 * scores every span of up to `max_width` words against every label, and the best
 * non-overlapping spans above the threshold become entities. Texts longer than `max_len` words
 * (or than the model's token limit) are read in overlapping windows whose entities are merged.
 */
import type {
  AdapterContext,
  ItemOutput,
  ModelAdapter,
  PreparedItem,
  RunResult,
  WorkItem,
  WorkParams,
} from "./types.ts";
import { outputF32, runTimed } from "./onnx_session.ts";
import { loadTextModel, type TextModel } from "./text/base.ts";
import { planSubBatches } from "../scheduler/sub_batches.ts";
import { type GlinerSettings, loadGlinerSettings } from "./gliner/config.ts";
import { splitWords, type Word } from "./gliner/words.ts";
import { planWindows } from "./gliner/windows.ts";
import { buildRow, type GlinerRow, promptIds } from "./gliner/rows.ts";
import { memoLast } from "./text/memo.ts";
import { glinerFeeds } from "./gliner/feeds.ts";
import { collectSpans, greedyFlat, type SpanCandidate, toEntities } from "./gliner/decode.ts";

/** An item split into words and window rows; `length` counts the tokens of all its rows. */
interface GlinerItem extends PreparedItem {
  text: string;
  words: Word[];
  rows: GlinerRow[];
}

/** A row waiting for the model, with the position of its item in the group. */
interface RowRef extends PreparedItem {
  row: GlinerRow;
}

/** Build the GLiNER adapter. */
export async function createGlinerAdapter(ctx: AdapterContext): Promise<ModelAdapter<GlinerItem>> {
  const model = await loadTextModel(ctx);
  const settings = await loadGlinerSettings(ctx, model.tokenizer);
  return new GlinerAdapter(model, settings, ctx.runTokenBudget);
}

class GlinerAdapter implements ModelAdapter<GlinerItem> {
  /** Items of one batch share their labels: build the label prompt once. */
  readonly #prompt: (labelsKey: string) => number[];

  constructor(
    private readonly model: TextModel,
    private readonly s: GlinerSettings,
    /** Most padded tokens in one ONNX run: a long text's windows are run in slices. */
    private readonly tokenBudget: number,
  ) {
    this.#prompt = memoLast((key) =>
      promptIds(model.tokenizer, key.split("\u0000"), s.entId, s.sepId)
    );
  }

  prepare(item: WorkItem, index: number, params: WorkParams): GlinerItem {
    const tok = this.model.tokenizer;
    const text = item.text ?? "";
    const fail = (message: string): GlinerItem => ({
      index,
      length: 0,
      text,
      words: [],
      rows: [],
      error: { code: "INVALID_INPUT", message },
    });
    const labels = params.labels ?? [];
    if (labels.length === 0) return fail("GLiNER models need params.labels (entity types)");
    const prompt = this.#prompt(labels.join("\u0000"));
    const { prefix, suffix } = tok.template;
    const room = tok.maxLength - prefix.length - suffix.length - prompt.length;
    if (room < 1) {
      return fail(
        `the labels take ${prompt.length} tokens; the model reads at most ${tok.maxLength}`,
      );
    }
    const words = splitWords(text);
    // Texts repeat words a lot: tokenise each distinct word once.
    const cache = new Map<string, number[]>();
    const wordIds = words.map((w) => {
      let ids = cache.get(w.text);
      if (!ids) cache.set(w.text, ids = tok.bodyIds(w.text, room));
      return ids;
    });
    const windows = planWindows(
      wordIds.map((ids) => ids.length),
      this.s.maxWords,
      room,
      this.s.maxWidth - 1,
    );
    const rows = windows.map((w) => buildRow(tok, prompt, wordIds, w, room));
    const length = rows.reduce((n, r) => n + r.ids.length, 0);
    return { index, length, text, words, rows };
  }

  async run(group: GlinerItem[], params: WorkParams): Promise<RunResult> {
    const labels = params.labels ?? [];
    const threshold = params.threshold ?? this.s.threshold;
    const refs: RowRef[] = group.flatMap((item, g) =>
      item.rows.map((row) => ({ index: g, length: row.ids.length, row }))
    );
    refs.sort((a, b) => a.length - b.length);
    const found: SpanCandidate[][] = group.map(() => []);
    let inferenceMs = 0;
    let postprocessingMs = 0;
    for (const slice of planSubBatches(refs, this.tokenBudget)) {
      const feeds = glinerFeeds(this.model.session, slice.map((r) => r.row), this.s.maxWidth);
      const { out, ms } = await runTimed(this.model.session, feeds);
      inferenceMs += ms;
      const t0 = performance.now();
      const { data, dims } = outputF32(out, ["logits"]);
      if (dims.length !== 4 || dims[2] !== this.s.maxWidth || dims[3] !== labels.length) {
        throw new Error(
          `GLiNER logits [${dims}] do not match max_width ${this.s.maxWidth} and ` +
            `${labels.length} labels`,
        );
      }
      slice.forEach((r, b) => collectSpans(data, dims, b, r.row, threshold, found[r.index]));
      postprocessingMs += performance.now() - t0;
    }
    const t0 = performance.now();
    const outputs: ItemOutput[] = group.map((item, g) => {
      const spans = greedyFlat(found[g], item.words.length);
      return { entities: toEntities(spans, item.words, labels, item.text), tokens: item.length };
    });
    postprocessingMs += performance.now() - t0;
    return { outputs, inferenceMs, postprocessingMs };
  }

  async dispose(): Promise<void> {
    await this.model.session.session.release();
  }
}
