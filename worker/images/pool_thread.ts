/**
 * Entry point of an image pool thread (a Deno Web Worker): decodes and prepares one image at a
 * time with sharp, so no decode ever runs on the server's main thread.
 */
import { ImageRejected, prepareImage } from "./decode.ts";
import type { ImageJob, ImageThreadMessage } from "./protocol.ts";

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<ImageJob>) => void) | null;
  postMessage(msg: ImageThreadMessage, transfer?: Transferable[]): void;
};

scope.onmessage = async (e) => {
  const job = e.data;
  // The pool times the job from here: starting this thread is not the image's cost.
  scope.postMessage({ id: job.id, started: true });
  const t0 = performance.now();
  try {
    const image = await prepareImage(job.bytes, job.format, job.spec, job.limits);
    const ms = performance.now() - t0;
    scope.postMessage({ id: job.id, ok: true, image, ms }, [image.data.buffer]);
  } catch (err) {
    scope.postMessage({
      id: job.id,
      ok: false,
      kind: err instanceof ImageRejected ? "rejected" : "failed",
      message: err instanceof Error ? err.message : String(err),
    });
  }
};
