/** Item and ImageInput: the inputs of encode, score and extract. */

import { z } from "zod";
import { Bytes, FreeObject, type FreeObjectValue, optional } from "./common.ts";

/** Image formats a client may name. */
export const IMAGE_FORMATS = ["jpeg", "png", "webp"] as const;
/** One of {@link IMAGE_FORMATS}. */
export type ImageFormat = typeof IMAGE_FORMATS[number];

/** Most images one item may carry (static: bounds validation work before runtime limits apply). */
export const MAX_IMAGES_PER_ITEM = 64;

/** A validated image: `data` is always bytes. */
export interface ImageInput {
  data: Uint8Array;
  format?: ImageFormat;
}
/** An image as a client sends it: bytes (msgpack) or base64 (JSON); null means absent. */
export interface RawImageInput {
  data: Uint8Array | string;
  format?: ImageFormat | null;
}

const ImageObjectSchema = z.object({
  data: Bytes.refine((b) => b.length > 0, "image data is empty"),
  format: optional(z.enum(IMAGE_FORMATS)),
});

/**
 * Image bytes with a format hint. Bare bytes (msgpack `bin`) stand for `{data}`: the SIE
 * TypeScript client sends `images: [bytes]` as it is.
 */
export const ImageInputSchema: z.ZodType<ImageInput, RawImageInput | Uint8Array> = z.preprocess(
  (v) => (v instanceof Uint8Array ? { data: v } : v),
  ImageObjectSchema,
) as unknown as z.ZodType<ImageInput, RawImageInput | Uint8Array>;

/** A validated item: text and/or images, with an optional id echoed back. */
export interface Item {
  id?: string;
  text?: string;
  images?: ImageInput[];
  /**
   * Free-form facts about the item (the SIE clients send it). Extract on a relations model reads
   * `entity_labels` and `entities` from it; elsewhere it is ignored.
   */
  metadata?: FreeObjectValue;
}
/** An item as a client writes it. */
export interface ItemInput {
  id?: string | null;
  text?: string | null;
  images?: (RawImageInput | Uint8Array)[] | null;
  metadata?: FreeObjectValue | null;
}

/** One input; it must have text or at least one image. */
export const ItemSchema: z.ZodType<Item, ItemInput> = z
  .object({
    id: optional(z.string()),
    text: optional(z.string()),
    images: optional(z.array(ImageInputSchema).max(MAX_IMAGES_PER_ITEM)),
    metadata: optional(FreeObject),
  })
  .refine((i) => i.text !== undefined || (i.images !== undefined && i.images.length > 0), {
    message: "an item needs `text` or `images`",
  });

/** A non-empty list of items (its length limit is enforced by the decoder, see InputLimits). */
export const ItemsSchema: z.ZodType<Item[], ItemInput[]> = z
  .array(ItemSchema)
  .min(1, "must not be empty");
