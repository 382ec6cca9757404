/** Messages between the main thread and an image pool thread. */
import type { ImageFormat } from "@svc/shared/schemas/item";
import type { DecodeLimits, PreparedImage } from "./decode.ts";
import type { ImageSpec } from "./spec.ts";

/** Main → pool thread: prepare one image (its bytes are transferred). */
export interface ImageJob {
  id: number;
  bytes: Uint8Array<ArrayBuffer>;
  format?: ImageFormat;
  spec: ImageSpec;
  limits: DecodeLimits;
}

/** Pool thread → main: the job has begun on the thread (its time bound starts now). */
export interface ImageJobStarted {
  id: number;
  started: true;
}

/** Everything a pool thread posts. */
export type ImageThreadMessage = ImageJobStarted | ImageJobResult;

/** Pool thread → main: the prepared image (its tensor transferred) or why it failed. */
export type ImageJobResult =
  | { id: number; ok: true; image: PreparedImage; ms: number }
  | {
    id: number;
    ok: false;
    /** `rejected`: the image is bad (client error); `failed`: the decoder failed otherwise. */
    kind: "rejected" | "failed";
    message: string;
  };
