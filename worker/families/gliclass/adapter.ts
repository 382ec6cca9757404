/**
 * GLiClass uni-encoder family: every candidate label goes into one prompt with the text
 * (`<<LABEL>>l1<<LABEL>>l2…<<SEP>>`, then the instruction if any; the text before or after, as the
 * model's `prompt_first` says) and one forward pass gives a logit per label. Multi-label: sigmoid
 * per label, kept at the threshold; single-label: softmax across labels.
 */
import type {
  AdapterContext,
  ItemOutput,
  ModelAdapter,
  RunResult,
  WorkItem,
  WorkParams,
} from "../types.ts";
import { padTokens } from "../text/tensors.ts";
import { outputF32, runTimed, tokenFeeds } from "../onnx_session.ts";
import { assertFinite } from "../finite.ts";
import type { TextItem } from "../text/prepare.ts";
import { readJsonFile, type TextTokenizer } from "../text/tokenizer.ts";
import { loadTextModel, type TextModel } from "../text/base.ts";
import { memoLast } from "../text/memo.ts";
import { rankLabels, sigmoid, softmax } from "../classification.ts";

/** The prompt tokens and layout of a GLiClass model. */
export interface GliclassSettings {
  labelId: number;
  sepId: number;
  /** Label prompt before the text (true) or after it (false). */
  promptFirst: boolean;
  /** Multi-label threshold when the request sets none. */
  threshold: number;
}

/** An item's tokens (text and label prompt). */
type GliclassItem = TextItem;

/** Build the GLiClass adapter. */
export async function createGliclassAdapter(
  ctx: AdapterContext,
): Promise<ModelAdapter<GliclassItem>> {
  const model = await loadTextModel(ctx);
  const cfg = ((await readJsonFile(ctx.files.config, ctx.jsonBounds)) ?? {}) as {
    prompt_first?: unknown;
  };
  const fo = ctx.config.family_options;
  const tokenId = (token: string): number => {
    const id = model.tokenizer.tokenId(token);
    if (id === undefined) throw new Error(`GLiClass model has no '${token}' token`);
    return id;
  };
  const promptFirst = cfg.prompt_first ?? fo.prompt_first ?? false;
  if (typeof promptFirst !== "boolean") throw new Error("GLiClass prompt_first must be boolean");
  return new GliclassAdapter(model, {
    labelId: tokenId("<<LABEL>>"),
    sepId: tokenId("<<SEP>>"),
    promptFirst,
    threshold: typeof fo.threshold === "number" ? fo.threshold : 0.5,
  });
}

/** The label prompt text: `<<LABEL>>` before each label, `<<SEP>>`, then the instruction. */
export function labelPrompt(labels: readonly string[], instruction = ""): string {
  return labels.map((l) => `<<LABEL>>${l}`).join("") + "<<SEP>>" + instruction;
}

/**
 * Body ids of a GLiClass input within `room` tokens. The composed string is tokenised whole, as
 * the reference pipelines do; when it is too long the text is cut, never the label prompt.
 */
export function gliclassBody(
  tok: TextTokenizer,
  s: GliclassSettings,
  prompt: string,
  labels: number,
  text: string,
  room: number,
): { ids: number[]; truncated?: boolean } | { error: string } {
  // A text longer than ~24 characters per token of room cannot fit whole: cut it first so that a
  // huge text costs O(room); take it all when that cut yields too few tokens.
  const cap = Math.max(64, room * 24);
  const compose = (t: string) =>
    tok.bodyIds(s.promptFirst ? prompt + t : t + prompt, Number.MAX_SAFE_INTEGER);
  let capped = text.length > cap;
  let ids = compose(capped ? text.slice(0, cap) : text);
  if (capped && ids.length < room) {
    ids = compose(text);
    capped = false;
  }
  const marks = ids.filter((id) => id === s.labelId).length;
  const seps = ids.filter((id) => id === s.sepId).length;
  if (marks !== labels || seps !== 1) {
    return { error: "the text contains one of the model's prompt tokens (<<LABEL>>, <<SEP>>)" };
  }
  const start = ids.indexOf(s.labelId);
  const end = ids.indexOf(s.sepId) + 1;
  if (end - start > room) {
    return { error: `the labels take ${end - start} tokens; the model reads at most ${room}` };
  }
  // A capped text filled the room: what was left out is cut too.
  if (ids.length <= room) return { ids, truncated: capped };
  if (s.promptFirst) return { ids: ids.slice(0, room), truncated: true };
  const tail = ids.slice(start);
  return {
    ids: [...ids.slice(0, Math.max(0, room - tail.length)), ...tail.slice(0, room)],
    truncated: true,
  };
}

class GliclassAdapter implements ModelAdapter<GliclassItem> {
  /** Labels are checked once per batch (they are shared by its items). */
  readonly #checkLabels: (key: string) => string | undefined;

  constructor(private readonly model: TextModel, private readonly s: GliclassSettings) {
    const reserved = new Set([s.labelId, s.sepId]);
    this.#checkLabels = memoLast((key) => {
      const [instruction, ...labels] = JSON.parse(key) as string[];
      for (const label of labels) {
        const bad = model.tokenizer.reservedTokenIn(label, reserved);
        if (bad) return `label '${label}' contains the model's special token '${bad}'`;
      }
      const bad = model.tokenizer.reservedTokenIn(instruction, reserved);
      return bad ? `the instruction contains the model's special token '${bad}'` : undefined;
    });
  }

  prepare(item: WorkItem, index: number, params: WorkParams): GliclassItem {
    const tok = this.model.tokenizer;
    const labels = params.labels ?? [];
    const fail = (message: string): GliclassItem => ({
      index,
      length: 0,
      ids: [],
      error: { code: "INVALID_INPUT", message },
    });
    if (labels.length === 0) return fail("GLiClass models need params.labels (candidate classes)");
    const problem = this.#checkLabels(JSON.stringify([params.prompt ?? "", ...labels]));
    if (problem) return fail(problem);
    const { prefix, suffix } = tok.template;
    const room = tok.maxLength - prefix.length - suffix.length;
    const prompt = labelPrompt(labels, params.prompt);
    const body = gliclassBody(tok, this.s, prompt, labels.length, item.text ?? "", room);
    if ("error" in body) return fail(body.error);
    const ids = [...prefix, ...body.ids, ...suffix];
    return { index, length: ids.length, ids, truncated: body.truncated };
  }

  async run(group: GliclassItem[], params: WorkParams): Promise<RunResult> {
    const t = padTokens(group);
    const { out, ms } = await runTimed(this.model.session, tokenFeeds(this.model.session, t));
    const t0 = performance.now();
    const labels = params.labels ?? [];
    const { data, dims } = outputF32(out, ["logits"]);
    assertFinite(data, "logits");
    if (dims.length !== 2 || dims[1] !== labels.length) {
      throw new Error(`GLiClass logits [${dims}] do not match ${labels.length} labels`);
    }
    const C = labels.length;
    const multi = params.multiLabel ?? true;
    const threshold = params.threshold ?? (multi ? this.s.threshold : undefined);
    const outputs: ItemOutput[] = group.map((item, b) => {
      const logits = Array.from(data.subarray(b * C, b * C + C));
      const scores = multi ? logits.map(sigmoid) : softmax(logits);
      return { classifications: rankLabels(labels, scores, threshold), tokens: item.length };
    });
    return { outputs, inferenceMs: ms, postprocessingMs: performance.now() - t0 };
  }

  async dispose(): Promise<void> {
    await this.model.session.session.release();
  }
}
