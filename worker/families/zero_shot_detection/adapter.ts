/**
 * Open-vocabulary object detection (OWL-ViT, OWLv2 exports): the request's labels are text
 * queries, tokenised once per batch and repeated for every image (`input_ids`,
 * `attention_mask` `[B·Q, T]`), with `pixel_values [B, 3, S, S]` → `logits [B, P, Q]`,
 * `pred_boxes [B, P, 4]`. Each box keeps its best query when the sigmoid of its logit passes the
 * threshold; the object's label is that query.
 */
import ort from "onnxruntime-node";
import { type ModelSession, openSession, outputF32, runTimed } from "../onnx_session.ts";
import { padTokens } from "../text/tensors.ts";
import { loadTextTokenizer, type TextTokenizer } from "../text/tokenizer.ts";
import type {
  AdapterContext,
  ItemOutput,
  ModelAdapter,
  RunResult,
  WorkItem,
  WorkParams,
} from "../types.ts";
import { decodeOpenSet } from "../vision/boxes.ts";
import { stackPixels } from "../vision/pixels.ts";
import { type ImageItem, prepareImageItem } from "../detection/adapter.ts";

/** Score threshold when neither the request nor the catalog sets one (the common OWL default). */
const DEFAULT_THRESHOLD = 0.1;

/** Build the open-vocabulary detection adapter. */
export async function createZeroShotDetectionAdapter(
  ctx: AdapterContext,
): Promise<ModelAdapter<ImageItem>> {
  const tokenizer = await loadTextTokenizer(
    ctx.files,
    ctx.config.max_sequence_length,
    ctx.jsonBounds,
  );
  const session = await openSession(ctx.files.model, ctx.executionProviders, ctx.intraOpThreads);
  const fallback = ctx.config.family_options.threshold;
  return new ZeroShotDetectionAdapter(
    tokenizer,
    session,
    typeof fallback === "number" ? fallback : DEFAULT_THRESHOLD,
  );
}

class ZeroShotDetectionAdapter implements ModelAdapter<ImageItem> {
  constructor(
    private readonly tokenizer: TextTokenizer,
    private readonly session: ModelSession,
    private readonly threshold: number,
  ) {}

  prepare(item: WorkItem, index: number): ImageItem {
    return prepareImageItem(item, index);
  }

  async run(group: ImageItem[], params: WorkParams): Promise<RunResult> {
    const queries = params.labels ?? [];
    if (queries.length === 0) throw new Error("open-vocabulary detection needs labels");
    const rows = queries.map((q) => ({ ids: this.tokenizer.encode(q).ids }));
    const b = stackPixels(group.map((it) => it.pixels!));
    // Every image reads every query: the query rows repeat once per image.
    const t = padTokens(Array.from({ length: b.batch }, () => rows).flat());
    const shape = [t.batch, t.seq];
    const all: Record<string, () => ort.Tensor> = {
      input_ids: () => new ort.Tensor("int64", t.inputIds, shape),
      attention_mask: () => new ort.Tensor("int64", t.attentionMask, shape),
      pixel_values: () => new ort.Tensor("float32", b.values, [b.batch, 3, b.height, b.width]),
    };
    const feeds: Record<string, ort.Tensor> = {};
    for (const name of this.session.inputNames) {
      const make = all[name];
      if (!make) throw new Error(`model input '${name}' is not one this family provides`);
      feeds[name] = make();
    }
    const r = await runTimed(this.session, feeds);
    const t0 = performance.now();
    const logits = outputF32(r.out, ["logits"]);
    const boxes = outputF32(r.out, ["pred_boxes"]);
    const [, count, perImage] = logits.dims;
    const outputs: ItemOutput[] = group.map((it, i) => ({
      objects: decodeOpenSet(
        {
          logits: logits.data.subarray(i * count * perImage, (i + 1) * count * perImage),
          boxes: boxes.data.subarray(i * count * 4, (i + 1) * count * 4),
          queries: count,
          classes: perImage,
        },
        queries,
        params.threshold ?? this.threshold,
        it.pixels!.frame,
        it.pixels!.original,
      ),
      tokens: it.length,
    }));
    return { outputs, inferenceMs: r.ms, postprocessingMs: performance.now() - t0 };
  }

  async dispose(): Promise<void> {
    await this.session.session.release();
  }
}
