/**
 * Token classification family (BIO NER, e.g. bert-base-NER): BERT inputs → `logits [B, L, C]`;
 * softmax and argmax per token, B-/I- runs merged into entities with character offsets.
 * Texts longer than `max_sequence_length` are truncated: entities only come from the part the
 * model saw.
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
import type { TokenTensors } from "../text/tensors.ts";
import { outputF32 } from "../onnx_session.ts";
import { assertFinite } from "../finite.ts";
import type { TextItem } from "../text/prepare.ts";
import { readJsonFile } from "../text/tokenizer.ts";
import { loadTextModel, TextAdapter, type TextModel } from "../text/base.ts";
import { tokenizeWithOffsets, type TokenSpans } from "../text/word_offsets.ts";
import { labelList } from "../labels.ts";

/** An entity as the API returns it. */
export type TokenEntity = NonNullable<ItemOutput["entities"]>[number];

/** A tokenised item with the character span of every body token. */
interface TaggedItem extends TextItem {
  text: string;
  spans: TokenSpans;
  /** Position of the first body token in `ids` (after the template's prefix). */
  bodyAt: number;
}

/** One token's winning label and its probability. */
export interface TokenTag {
  label: string;
  prob: number;
  start: number;
  end: number;
}

/** Build the token classification adapter. */
export async function createTokenClassificationAdapter(
  ctx: AdapterContext,
): Promise<ModelAdapter<TaggedItem>> {
  const labels = labelList(ctx.config.family_options.id2label) ??
    labelList(
      ((await readJsonFile(ctx.files.config, ctx.jsonBounds)) as { id2label?: unknown })?.id2label,
    );
  if (!labels) throw new Error(`model '${ctx.config.id}' has no id2label (family_options)`);
  const threshold = ctx.config.family_options.threshold;
  return new TokenClassificationAdapter(
    await loadTextModel(ctx),
    labels,
    typeof threshold === "number" ? threshold : 0,
  );
}

/**
 * Merge tagged tokens into entities. `B-X` (or `S-X`) starts an entity, `I-X` (or `E-X`)
 * continues one of the same type and starts one otherwise (an I- without a B-); `O` ends it.
 * A label without a prefix acts as I- (IO tagging). The score is the mean probability of the
 * run's tokens, as Hugging Face's "simple" aggregation does.
 */
export function mergeTags(tags: TokenTag[], text: string): TokenEntity[] {
  const out: TokenEntity[] = [];
  let run: { type: string; start: number; end: number; sum: number; n: number } | undefined;
  const close = () => {
    if (!run) return;
    const { type, start, end, sum, n } = run;
    out.push({ text: text.slice(start, end), label: type, score: sum / n, start, end });
    run = undefined;
  };
  for (const t of tags) {
    if (t.label === "O") {
      close();
      continue;
    }
    const m = /^([BIES])-(.+)$/.exec(t.label);
    const begins = m !== null && (m[1] === "B" || m[1] === "S");
    const type = m ? m[2] : t.label;
    if (run && !begins && run.type === type) {
      run.end = Math.max(run.end, t.end);
      run.sum += t.prob;
      run.n++;
      continue;
    }
    close();
    run = { type, start: t.start, end: t.end, sum: t.prob, n: 1 };
  }
  close();
  return out;
}

/** Argmax label and its softmax probability of the logits row at `base` (`classes` values). */
export function argmaxSoftmax(
  data: Float32Array,
  base: number,
  classes: number,
): { best: number; prob: number } {
  let best = 0;
  for (let c = 1; c < classes; c++) if (data[base + c] > data[base + best]) best = c;
  const top = data[base + best];
  let sum = 0;
  for (let c = 0; c < classes; c++) sum += Math.exp(data[base + c] - top);
  return { best, prob: 1 / sum };
}

class TokenClassificationAdapter extends TextAdapter<TaggedItem> {
  constructor(
    model: TextModel,
    private readonly labels: string[],
    private readonly defaultThreshold: number,
  ) {
    super(model);
  }

  override prepare(item: WorkItem, index: number, _params: WorkParams): TaggedItem {
    // No instruction prefix: offsets must point into the text the client sent.
    const tok = this.model.tokenizer;
    const { prefix, suffix } = tok.template;
    const text = item.text ?? "";
    const room = Math.max(0, tok.maxLength - prefix.length - suffix.length);
    const spans = tokenizeWithOffsets(tok, text, room);
    const ids = [...prefix, ...spans.ids, ...suffix];
    const truncated = spans.truncated;
    return { index, length: ids.length, ids, text, spans, bodyAt: prefix.length, truncated };
  }

  /**
   * Run the base skeleton, then keep the entities the request asked for (`params` is optional
   * only because the base signature has none; the driver always passes it).
   */
  override async run(group: TaggedItem[], params?: WorkParams): Promise<RunResult> {
    const r = await super.run(group);
    const t0 = performance.now();
    const wanted = params?.labels?.length
      ? new Set(params.labels.map((l) => l.toLowerCase()))
      : undefined;
    const threshold = params?.threshold ?? this.defaultThreshold;
    for (const o of r.outputs) {
      o.entities = o.entities?.filter((e) =>
        e.score >= threshold && (!wanted || wanted.has(e.label.toLowerCase()))
      );
    }
    return { ...r, postprocessingMs: r.postprocessingMs + performance.now() - t0 };
  }

  protected postprocess(
    group: TaggedItem[],
    out: ort.InferenceSession.ReturnType,
    t: TokenTensors,
  ): ItemOutput[] {
    const { data, dims } = outputF32(out, ["logits"]);
    // A NaN logit would fall below the threshold: an empty answer instead of an error.
    assertFinite(data, "logits");
    const classes = dims[dims.length - 1];
    if (classes !== this.labels.length) {
      throw new Error(`model has ${classes} classes but id2label names ${this.labels.length}`);
    }
    return group.map((item, b) => {
      const { ids, starts, ends } = item.spans;
      const tags = ids.map((_, i): TokenTag => {
        const row = (b * t.seq + item.bodyAt + i) * classes;
        const { best, prob } = argmaxSoftmax(data, row, classes);
        return { label: this.labels[best], prob, start: starts[i], end: ends[i] };
      });
      return { entities: mergeTags(tags, item.text), tokens: item.length };
    });
  }
}
