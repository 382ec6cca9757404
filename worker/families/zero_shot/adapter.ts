/**
 * Zero-shot classification with an NLI cross-encoder (the transformers "zero-shot-classification"
 * recipe): each candidate label becomes a hypothesis (`hypothesis_template`, default
 * `This example is {}.`), each (text, hypothesis) pair is scored like a reranker pair, and the
 * entailment logits become the labels' probabilities: a softmax across labels (single-label) or,
 * per label, a softmax over [contradiction, entailment] (multi-label).
 */
import type {
  AdapterContext,
  ItemOutput,
  ModelAdapter,
  PreparedItem,
  RunControl,
  RunResult,
  WorkItem,
  WorkParams,
} from "../types.ts";
import { outputF32, runTimed, tokenFeeds } from "../onnx_session.ts";
import { assertFinite } from "../finite.ts";
import { loadTextModel, type TextModel } from "../text/base.ts";
import { readJsonFile } from "../text/tokenizer.ts";
import { padTokens } from "../text/tensors.ts";
import { memoLast } from "../text/memo.ts";
import { planSubBatches } from "../../scheduler/sub_batches.ts";
import { labelList } from "../labels.ts";
import { type NliHeads, nliHeads, rankLabels, sigmoid, softmax } from "../classification.ts";
import { DEFAULT_EXTRACT_BUDGET, type ExtractBudget, itemOverBudget } from "../extract_budget.ts";

/** The template transformers' pipeline uses when none is given. */
export const DEFAULT_HYPOTHESIS_TEMPLATE = "This example is {}.";

/** One (text, hypothesis) pair, tokenised. */
interface Pair {
  ids: number[];
  typeIds: number[];
}

/** An item with one pair per candidate label; `length` counts the tokens of all its pairs. */
interface NliItem extends PreparedItem {
  pairs: Pair[];
}

/** A pair waiting for the model: its item's position in the group and its label. */
interface PairRef extends PreparedItem {
  label: number;
  pair: Pair;
}

/** Hypotheses of a batch's labels, tokenised, or why they cannot be used. */
type Hypotheses = { ids: number[][] } | { error: string };

/** Build the zero-shot NLI adapter. */
export async function createZeroShotAdapter(ctx: AdapterContext): Promise<ModelAdapter<NliItem>> {
  const fromConfig = labelList(
    ((await readJsonFile(ctx.files.config, ctx.jsonBounds)) as { id2label?: unknown } | undefined)
      ?.id2label,
  );
  const labels = fromConfig ?? labelList(ctx.config.family_options.id2label);
  if (!labels) throw new Error(`model '${ctx.config.id}' has no id2label (config.json)`);
  return new ZeroShotAdapter(
    await loadTextModel(ctx),
    nliHeads(labels),
    ctx.runTokenBudget,
    ctx.extractBudget ?? DEFAULT_EXTRACT_BUDGET,
  );
}

/** The hypothesis of a label: the instruction (if any), then the template filled in. */
export function hypothesis(label: string, template: string, prompt?: string): string {
  const filled = template.replace("{}", label);
  if (!prompt) return filled;
  return /\s$/.test(prompt) ? prompt + filled : `${prompt} ${filled}`;
}

class ZeroShotAdapter implements ModelAdapter<NliItem> {
  /** A batch shares its labels, template and instruction: tokenise the hypotheses once. */
  readonly #hypotheses: (key: string) => Hypotheses;

  constructor(
    private readonly model: TextModel,
    private readonly heads: NliHeads,
    /** Most padded tokens in one ONNX run: an item's pairs are run in slices. */
    private readonly tokenBudget: number,
    /** Bounds of one item's work: its pairs are items × labels of the request. */
    private readonly budget: ExtractBudget,
  ) {
    const tok = model.tokenizer;
    this.#hypotheses = memoLast((key) => {
      const [template, prompt, ...labels] = JSON.parse(key) as string[];
      for (const label of labels) {
        const bad = tok.reservedTokenIn(label);
        if (bad) return { error: `label '${label}' contains the model's special token '${bad}'` };
      }
      const bad = tok.reservedTokenIn(hypothesis("", template, prompt));
      if (bad) return { error: `the hypothesis template or instruction contains '${bad}'` };
      return {
        ids: labels.map((l) => tok.bodyIds(hypothesis(l, template, prompt), tok.pairRoom())),
      };
    });
  }

  prepare(item: WorkItem, index: number, params: WorkParams): NliItem {
    const tok = this.model.tokenizer;
    const fail = (message: string): NliItem => ({
      index,
      length: 0,
      pairs: [],
      error: { code: "INVALID_INPUT", message },
    });
    const labels = params.labels ?? [];
    if (labels.length === 0) return fail("zero-shot models need params.labels (candidate classes)");
    const template = params.hypothesisTemplate ?? DEFAULT_HYPOTHESIS_TEMPLATE;
    const hyps = this.#hypotheses(JSON.stringify([template, params.prompt ?? "", ...labels]));
    if ("error" in hyps) return fail(hyps.error);
    const premise = tok.bodyIdsCut(item.text ?? "", tok.pairRoom());
    let truncated = premise.cut;
    const pairs = hyps.ids.map((h) => {
      const pair = tok.encodePair(premise.ids, h);
      truncated ||= pair.truncated === true;
      return { ids: pair.ids, typeIds: pair.typeIds ?? [] };
    });
    const length = pairs.reduce((n, p) => n + p.ids.length, 0);
    if (length > this.budget.maxItemTokens) {
      return fail(
        itemOverBudget(length, this.budget, `${pairs.length} text-hypothesis pairs, one per label`),
      );
    }
    return { index, length, pairs, truncated };
  }

  async run(group: NliItem[], params: WorkParams, control?: RunControl): Promise<RunResult> {
    const refs: PairRef[] = group.flatMap((item, g) =>
      item.pairs.map((pair, label) => ({ index: g, length: pair.ids.length, label, pair }))
    );
    refs.sort((a, b) => a.length - b.length);
    const entail = group.map((item) => new Array<number>(item.pairs.length));
    const contra = group.map((item) => new Array<number>(item.pairs.length));
    let inferenceMs = 0;
    let postprocessingMs = 0;
    // The pairs of an item whose client left are dropped from every run not yet started.
    const gone = (g: number) => control?.gone(group[g].index) ?? false;
    for (const planned of planSubBatches(refs, this.tokenBudget)) {
      const slice = planned.filter((r) => !gone(r.index));
      if (slice.length === 0) continue;
      const t = padTokens(slice.map((r) => r.pair));
      const { out, ms } = await runTimed(this.model.session, tokenFeeds(this.model.session, t));
      inferenceMs += ms;
      const t0 = performance.now();
      const { data, dims } = outputF32(out, ["logits"]);
      assertFinite(data, "logits");
      const classes = dims[dims.length - 1];
      const { entailment, contradiction } = this.heads;
      if (dims.length !== 2 || Math.max(entailment, contradiction) >= classes) {
        throw new Error(
          `NLI logits [${dims}] do not hold the entailment and contradiction classes`,
        );
      }
      slice.forEach((r, b) => {
        entail[r.index][r.label] = data[b * classes + entailment];
        contra[r.index][r.label] = data[b * classes + contradiction];
      });
      postprocessingMs += performance.now() - t0;
    }
    const t0 = performance.now();
    const labels = params.labels ?? [];
    const outputs: ItemOutput[] = group.map((item, g) => {
      if (gone(g)) return { tokens: item.length };
      const scores = params.multiLabel
        ? entail[g].map((e, k) => sigmoid(e - contra[g][k])) // softmax over [contradiction, entailment]
        : softmax(entail[g]);
      return { classifications: rankLabels(labels, scores, params.threshold), tokens: item.length };
    });
    postprocessingMs += performance.now() - t0;
    return { outputs, inferenceMs, postprocessingMs };
  }

  async dispose(): Promise<void> {
    await this.model.session.session.release();
  }
}
