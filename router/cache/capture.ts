/**
 * Capturing a worker's answer on its way to the client, for the result cache and the requests
 * coalesced behind it. A small answer arrives whole (router/proxy/upstream.ts) and is kept as
 * is. A larger one streams to the client as it always does; its chunks are kept as they pass
 * (the same chunks, not copies) and joined once the last one is through, so a cached answer
 * costs its bytes once, plus one join at the end. Answers over the entry bound are never kept:
 * one whose declared length is over it is not watched at all, and one that grows over it while
 * streaming lets go of what it kept at once.
 */
import type { WorkerAnswer } from "../proxy/forward.ts";
import { joinChunks } from "../proxy/join_chunks.ts";

/** Told once: the answer's whole body, or undefined when it will not be had whole. */
export type OnBody = (body: Uint8Array | undefined) => void;

/**
 * The client's `Response` for `answer` (with `headers`), calling `onBody` with its body once
 * the client has been given all of it: only for a 200 of at most `maxBytes`.
 */
export function captureAnswer(
  answer: WorkerAnswer,
  headers: Headers,
  maxBytes: number,
  onBody: OnBody,
): Response {
  const init = { status: answer.status, statusText: answer.statusText, headers };
  const declared = Number(answer.headers["content-length"] ?? NaN);
  const body = answer.body;
  if (answer.status !== 200 || declared > maxBytes) {
    onBody(undefined);
    return new Response(body as BodyInit | null, init);
  }
  if (body === null) {
    onBody(new Uint8Array(0));
    return new Response(null, init);
  }
  if (body instanceof Uint8Array) {
    onBody(body);
    return new Response(body as Uint8Array<ArrayBuffer>, init);
  }
  return new Response(tap(body, maxBytes, onBody), init);
}

/**
 * `bytes` in a buffer of its own size (copied only when it is a view of a larger one, such as a
 * socket read, which a cache entry would otherwise keep alive whole).
 */
export function exact(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
    ? bytes
    : bytes.slice();
}

/** `src` passed on chunk by chunk as the client reads, its chunks kept up to `maxBytes`. */
function tap(
  src: ReadableStream<Uint8Array>,
  maxBytes: number,
  onBody: OnBody,
): ReadableStream<Uint8Array> {
  const reader = src.getReader();
  let kept: Uint8Array[] | undefined = [];
  let size = 0;
  let told = false;
  const tell = (body: Uint8Array | undefined) => {
    kept = undefined;
    if (told) return;
    told = true;
    onBody(body);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await reader.read();
      } catch (err) {
        tell(undefined);
        controller.error(err);
        return;
      }
      if (step.done) {
        controller.close();
        tell(kept ? joinChunks(kept, size) : undefined);
        return;
      }
      const chunk = step.value;
      if (kept) {
        size += chunk.length;
        if (size <= maxBytes) kept.push(chunk);
        else tell(undefined);
      }
      controller.enqueue(chunk);
    },
    cancel(reason) {
      tell(undefined);
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
