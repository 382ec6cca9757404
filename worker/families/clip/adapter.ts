/**
 * CLIP family: a text tower and a vision tower that embed into one space. Text items run through
 * the text graph (`files.model`: `input_ids` [+ `attention_mask`] → `text_embeds`), image items
 * through the vision graph (`files.vision_model`: `pixel_values` → `image_embeds`); one batch may
 * hold both. An item with several images (or, on a model whose catalog entry sets
 * `fuse_text_and_image`, text and images) gets the mean of its parts' vectors; every vector is
 * L2-normalised.
 */
import ort from "onnxruntime-node";
import { imageTokens } from "../../scheduler/sub_batches.ts";
import {
  type ModelSession,
  openSession,
  outputF32,
  runTimed,
  tokenFeeds,
} from "../onnx_session.ts";
import { l2Normalize } from "../text/pooling.ts";
import { prepareText } from "../text/prepare.ts";
import { padTokens } from "../text/tensors.ts";
import { loadTextTokenizer, type TextTokenizer } from "../text/tokenizer.ts";
import type {
  AdapterContext,
  ItemOutput,
  ModelAdapter,
  PixelInput,
  PreparedItem,
  RunResult,
  WorkItem,
  WorkParams,
} from "../types.ts";
import { stackPixels } from "../vision/pixels.ts";

/** A CLIP item: token ids of its text and/or its prepared images. */
interface ClipItem extends PreparedItem {
  ids?: number[];
  pixels?: PixelInput[];
}

/** Build the CLIP adapter (both towers). */
export async function createClipAdapter(ctx: AdapterContext): Promise<ModelAdapter<ClipItem>> {
  const vision = ctx.files.vision_model;
  if (!vision) throw new Error(`model '${ctx.config.id}' has no files.vision_model`);
  const tokenizer = await loadTextTokenizer(
    ctx.files,
    ctx.config.max_sequence_length,
    ctx.jsonBounds,
  );
  const text = await openSession(ctx.files.model, ctx.executionProviders, ctx.intraOpThreads);
  const image = await openSession(vision, ctx.executionProviders, ctx.intraOpThreads);
  return new ClipAdapter(tokenizer, text, image);
}

class ClipAdapter implements ModelAdapter<ClipItem> {
  constructor(
    private readonly tokenizer: TextTokenizer,
    private readonly text: ModelSession,
    private readonly image: ModelSession,
  ) {}

  prepare(item: WorkItem, index: number, params: WorkParams): ClipItem {
    const out: ClipItem = { index, length: 0 };
    if (item.text !== undefined || item.tokenIds) {
      const t = prepareText(this.tokenizer, item, index, params, this.tokenizer.vocabSize);
      if (t.error) return t;
      out.ids = t.ids;
      out.length += t.length;
    }
    if (item.pixels && item.pixels.length > 0) {
      out.pixels = item.pixels;
      for (const p of item.pixels) out.length += imageTokens(p.width, p.height);
    }
    return out;
  }

  async run(group: ClipItem[]): Promise<RunResult> {
    const texts = group.filter((it) => it.ids);
    const images = group.flatMap((it) => it.pixels ?? []);
    let inferenceMs = 0;
    let textEmbeds: Float32Array | undefined;
    let imageEmbeds: Float32Array | undefined;
    let dim = 0;
    if (texts.length > 0) {
      const t = padTokens(texts.map((it) => ({ ids: it.ids! })));
      const r = await runTimed(this.text, tokenFeeds(this.text, t));
      inferenceMs += r.ms;
      const o = outputF32(r.out, ["text_embeds"]);
      textEmbeds = o.data;
      dim = o.dims[1];
    }
    if (images.length > 0) {
      const b = stackPixels(images);
      const feeds = {
        pixel_values: new ort.Tensor("float32", b.values, [b.batch, 3, b.height, b.width]),
      };
      const r = await runTimed(this.image, feeds);
      inferenceMs += r.ms;
      const o = outputF32(r.out, ["image_embeds"]);
      imageEmbeds = o.data;
      dim = o.dims[1];
    }
    const t0 = performance.now();
    let textRow = 0;
    let imageRow = 0;
    const outputs: ItemOutput[] = group.map((it) => {
      // The item's parts, each normalised first so that a mean weighs them equally.
      const v = new Float32Array(dim);
      let parts = 0;
      const add = (src: Float32Array, row: number) => {
        const part = l2Normalize(src.slice(row * dim, (row + 1) * dim));
        for (let d = 0; d < dim; d++) v[d] += part[d];
        parts++;
      };
      if (it.ids) add(textEmbeds!, textRow++);
      for (const _ of it.pixels ?? []) add(imageEmbeds!, imageRow++);
      l2Normalize(v);
      return { dense: v, tokens: it.length };
    });
    return { outputs, inferenceMs, postprocessingMs: performance.now() - t0 };
  }

  async dispose(): Promise<void> {
    await this.text.session.release();
    await this.image.session.release();
  }
}
