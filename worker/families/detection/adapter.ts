/**
 * Closed-set object detection (DETR, YOLOS exports): `pixel_values` [+ `pixel_mask`] →
 * `logits [B, Q, C + 1]`, `pred_boxes [B, Q, 4]`. Images of one run are padded to the largest
 * (with the mask telling the graph which pixels are real); a graph without `pixel_mask` only
 * batches images of equal size. Labels come from the model's `config.json` `id2label`.
 */
import ort from "onnxruntime-node";
import { imageTokens } from "../../scheduler/sub_batches.ts";
import { type ModelSession, openSession, outputF32, runTimed } from "../onnx_session.ts";
import { readJsonFile } from "../text/tokenizer.ts";
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
import { decodeClosedSet } from "../vision/boxes.ts";
import { stackPixels } from "../vision/pixels.ts";

/** An image item of a detection model. */
export interface ImageItem extends PreparedItem {
  pixels?: PixelInput;
}

/** Score threshold when neither the request nor the catalog sets one. */
const DEFAULT_THRESHOLD = 0.5;

/** Class names by id from `config.json` (`id2label`), else the catalog's `family_options`. */
export function labelsOf(
  config: unknown,
  familyOptions: Record<string, unknown>,
): (i: number) => string {
  const raw = (config as { id2label?: unknown } | undefined)?.id2label ?? familyOptions.id2label;
  const table: Record<string, unknown> = Array.isArray(raw)
    ? Object.fromEntries(raw.map((v, i) => [String(i), v]))
    : (raw && typeof raw === "object" ? raw as Record<string, unknown> : {});
  return (i) => {
    const v = table[String(i)];
    return typeof v === "string" ? v : `LABEL_${i}`;
  };
}

/** The one image of an item, or an item error (detection reads one image per item). */
export function prepareImageItem(item: WorkItem, index: number): ImageItem {
  const p = item.pixels?.[0];
  if (!p || item.pixels!.length !== 1) {
    return {
      index,
      length: 0,
      error: { code: "INVALID_INPUT", message: "a detection model reads one image per item" },
    };
  }
  return { index, length: imageTokens(p.width, p.height), pixels: p };
}

/** Build the closed-set detection adapter. */
export async function createDetectionAdapter(
  ctx: AdapterContext,
): Promise<ModelAdapter<ImageItem>> {
  const session = await openSession(ctx.files.model, ctx.executionProviders, ctx.intraOpThreads);
  const config = await readJsonFile(ctx.files.config, ctx.jsonBounds);
  const fallback = ctx.config.family_options.threshold;
  return new DetectionAdapter(
    session,
    labelsOf(config, ctx.config.family_options),
    typeof fallback === "number" ? fallback : DEFAULT_THRESHOLD,
  );
}

class DetectionAdapter implements ModelAdapter<ImageItem> {
  constructor(
    private readonly session: ModelSession,
    private readonly labels: (i: number) => string,
    private readonly threshold: number,
  ) {}

  prepare(item: WorkItem, index: number): ImageItem {
    return prepareImageItem(item, index);
  }

  async run(group: ImageItem[], params: WorkParams): Promise<RunResult> {
    const masked = this.session.inputNames.includes("pixel_mask");
    // Without a mask the graph cannot tell padding from image: batch equal sizes only.
    const runs = masked ? [group] : groupBySize(group);
    const outputs = new Map<ImageItem, ItemOutput>();
    let inferenceMs = 0;
    let postprocessingMs = 0;
    for (const run of runs) {
      const b = stackPixels(run.map((it) => it.pixels!));
      const feeds: Record<string, ort.Tensor> = {
        pixel_values: new ort.Tensor("float32", b.values, [b.batch, 3, b.height, b.width]),
      };
      if (masked) feeds.pixel_mask = new ort.Tensor("int64", b.mask, [b.batch, b.height, b.width]);
      const r = await runTimed(this.session, feeds);
      inferenceMs += r.ms;
      const t0 = performance.now();
      const logits = outputF32(r.out, ["logits"]);
      const boxes = outputF32(r.out, ["pred_boxes"]);
      const [, queries, classes] = logits.dims;
      run.forEach((it, i) => {
        const image = it.pixels!;
        const objects = decodeClosedSet(
          {
            logits: logits.data.subarray(i * queries * classes, (i + 1) * queries * classes),
            boxes: boxes.data.subarray(i * queries * 4, (i + 1) * queries * 4),
            queries,
            classes,
          },
          this.labels,
          params.threshold ?? this.threshold,
          image.frame,
          image.original,
        );
        // `params.labels` on a closed-set model keeps only those classes (case-insensitive).
        const wanted = params.labels && new Set(params.labels.map((l) => l.toLowerCase()));
        const kept = wanted ? objects.filter((o) => wanted.has(o.label.toLowerCase())) : objects;
        outputs.set(it, { objects: kept, tokens: it.length });
      });
      postprocessingMs += performance.now() - t0;
    }
    return { outputs: group.map((it) => outputs.get(it)!), inferenceMs, postprocessingMs };
  }

  async dispose(): Promise<void> {
    await this.session.session.release();
  }
}

/** Items split into runs of equal image size, in order of first appearance. */
function groupBySize(group: ImageItem[]): ImageItem[][] {
  const runs = new Map<string, ImageItem[]>();
  for (const it of group) {
    const key = `${it.pixels!.width}x${it.pixels!.height}`;
    runs.get(key)?.push(it) ?? runs.set(key, [it]);
  }
  return [...runs.values()];
}
