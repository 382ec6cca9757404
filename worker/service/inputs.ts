/**
 * A request's items as work for a model: each item's inputs checked against what the model reads
 * (`inputs` in its catalog entry), image counts and sizes checked against the limits before any
 * decoding, and images prepared on the image pool. A bad image fails the request at once with a
 * 400 naming the item and the image.
 */
import type { ServedModel } from "@svc/shared/catalog";
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { invalidInput, ServiceError } from "@svc/shared/errors";
import type { Item } from "@svc/shared/schemas/item";
import type { ImageSettings } from "../config/settings.ts";
import type { PixelInput, WorkItem } from "../families/types.ts";
import { FAMILY_INFOS } from "../families/infos.ts";
import { ImageJobError, type ImagePool } from "../images/pool.ts";
import { imageSpecOf } from "../images/spec.ts";

/** What preparing images needs from the worker. */
export interface ImageInputs {
  pool: ImagePool;
  limits: ImageSettings;
}

/** How an item is named in messages (`items[3]`, `query`). */
export type ItemName = (index: number) => string;

/** The default naming: `items[i]`. */
export const itemsName: ItemName = (i) => `items[${i}]`;

/** The id an item is answered under: its own, else `item-{index}` (as the SIE server does). */
export function answeredId(id: string | undefined, index: number): string {
  return id ?? `item-${index}`;
}

/** Work items plus the wall time spent preparing their images (reported as tokenisation). */
export interface PreparedWork {
  work: WorkItem[];
  imageMs: number;
}

/** Whether the catalog says the model turns text and images of one item into one output. */
export function fusesTextAndImage(config: ModelConfig): boolean {
  return config.family_options.fuse_text_and_image === true;
}

function accepts(config: ModelConfig): string {
  return config.inputs.join(" and ");
}

/** Throw a 400 when an item carries an input kind the model does not read. */
export function checkItemKinds(
  config: ModelConfig,
  items: readonly Item[],
  name: ItemName = itemsName,
): void {
  const readsText = config.inputs.includes("text");
  const readsImages = config.inputs.includes("image");
  items.forEach((it, i) => {
    const images = it.images?.length ?? 0;
    const hasText = it.text !== undefined;
    if (!hasText && images === 0) throw invalidInput(`${name(i)} has neither text nor images`);
    if (images > 0 && !readsImages) {
      throw invalidInput(
        `${name(i)} has images; model '${config.id}' reads ${accepts(config)} only`,
      );
    }
    if (hasText && !readsText) {
      throw invalidInput(
        `${name(i)} has text; model '${config.id}' reads images only (send the picture in ` +
          `images)`,
      );
    }
    if (hasText && images > 0 && !fusesTextAndImage(config)) {
      throw invalidInput(
        `${name(i)} has both text and images; model '${config.id}' embeds each on its own: ` +
          `send them as separate items`,
      );
    }
    if (images > 1 && FAMILY_INFOS[config.family]?.oneImagePerItem) {
      throw invalidInput(
        `${name(i)} has ${images} images; model '${config.id}' reads one image per item`,
      );
    }
  });
}

/** Throw a 400 when image counts or sizes pass the limits (before anything is decoded). */
export function checkImageLimits(
  items: readonly Item[],
  limits: ImageSettings,
  name: ItemName = itemsName,
): void {
  let total = 0;
  items.forEach((it, i) => {
    const images = it.images ?? [];
    if (images.length > limits.maxPerItem) {
      throw invalidInput(
        `${name(i)} has ${images.length} images; the limit is ${limits.maxPerItem} ` +
          `(SVC_MAX_IMAGES_PER_ITEM)`,
      );
    }
    images.forEach((img, j) => {
      if (img.data.length > limits.maxBytes) {
        throw invalidInput(
          `${name(i)}.images[${j}] is ${img.data.length} bytes; the limit is ${limits.maxBytes} ` +
            `(SVC_MAX_IMAGE_BYTES)`,
        );
      }
    });
    total += images.length;
  });
  if (total > limits.maxPerRequest) {
    throw invalidInput(
      `the request has ${total} images; the limit is ${limits.maxPerRequest} ` +
        `(SVC_MAX_IMAGES_PER_REQUEST)`,
    );
  }
}

/**
 * Check `items` against the model and the limits, prepare their images on the pool (all at once,
 * in parallel up to the pool's threads) and return the work items. The first bad image rejects
 * with a 400 naming it; the request's images still waiting are dropped.
 */
export async function prepareWork(
  images: ImageInputs,
  served: ServedModel,
  items: readonly Item[],
  signal: AbortSignal,
  name: ItemName = itemsName,
): Promise<PreparedWork> {
  const config = served.config;
  checkItemKinds(config, items, name);
  checkImageLimits(items, images.limits, name);
  const work: WorkItem[] = items.map((it) => ({ text: it.text }));
  if (!items.some((it) => (it.images?.length ?? 0) > 0)) return { work, imageMs: 0 };
  const spec = imageSpecOf(config);
  if (!spec) throw new Error(`model '${config.id}' reads images but has no image spec`);
  const t0 = performance.now();
  // One signal for the request's jobs: the client leaving or the first bad image drops the rest.
  // It also names the request to the pool, which lets requests take turns.
  const stop = new AbortController();
  const job = { signal: stop.signal, owner: stop };
  const onAbort = () => stop.abort(new Error("client went away"));
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    const jobs = items.map((it, i) =>
      Promise.all((it.images ?? []).map(async (img, j): Promise<PixelInput> => {
        try {
          return (await images.pool.prepare(img.data, img.format, spec, job)).image;
        } catch (err) {
          throw imageError(err, `${name(i)}.images[${j}]`);
        }
      }))
    );
    const prepared = await Promise.all(jobs.map((j) =>
      j.catch((err) => {
        stop.abort(err);
        throw err;
      })
    ));
    prepared.forEach((pixels, i) => {
      if (pixels.length > 0) work[i].pixels = pixels;
    });
    return { work, imageMs: performance.now() - t0 };
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/** The API error for an image that could not be prepared. */
function imageError(err: unknown, where: string): unknown {
  if (err instanceof ImageJobError) {
    return err.kind === "rejected"
      ? invalidInput(`${where} ${err.message}`)
      : new ServiceError("INTERNAL_ERROR", `${where}: image preprocessing failed (${err.message})`);
    // The cause (paths, library messages) went to the log; the client gets the plain kind.
  }
  return err;
}
