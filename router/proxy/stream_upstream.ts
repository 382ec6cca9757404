/**
 * A request to a worker over the connection it dialled (the connection transport): one stream of
 * the connection's multiplexer (shared/fleet/streams/mux.ts), answering with the same outcomes as
 * the HTTP client (upstream.ts), so forwarding applies the same rules whichever way it went. The
 * worker may have the whole request once every byte and the END were handed to the socket; a
 * connection lost before that, or a stream the worker refused unread, counts as never delivered
 * (one retry elsewhere); lost after it, before an answer, is `dropped` (502 `WORKER_LOST`).
 */
import { errorParts, invalidInput } from "@svc/shared/errors";
import { RESET } from "@svc/shared/fleet/streams/frames";
import { MAX_HEAD_BYTES, type MuxStream, type StreamMux } from "@svc/shared/fleet/streams/mux";
import type { UpstreamOutcome, UpstreamRequest } from "./upstream.ts";
import { joinChunks } from "./join_chunks.ts";

/** Answers of at most this many bytes are read whole before they are handed on (as upstream.ts). */
const WHOLE_MAX_BYTES = 64 * 1024;

/** Most headers an answer head may carry (the API defines about a dozen). */
const MAX_ANSWER_HEADERS = 64;

/** An answer head as the worker sent it, checked; undefined when it is not one. */
function answerHeadOf(
  raw: unknown,
): { status: number; headers: Record<string, string> } | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const { status, headers } = raw as { status?: unknown; headers?: unknown };
  if (typeof status !== "number" || !Number.isInteger(status) || status < 200 || status > 599) {
    return undefined;
  }
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) return undefined;
  const out: Record<string, string> = {};
  let n = 0;
  for (const [k, v] of Object.entries(headers)) {
    if (typeof v !== "string" || ++n > MAX_ANSWER_HEADERS) return undefined;
    out[k.toLowerCase()] = v;
  }
  return { status, headers: out };
}

/**
 * Send `req` on a new stream of `mux`; resolves with the worker's answer or what went wrong,
 * never rejects. `violation` closes the worker's connection (an answer head that is not one).
 */
export function sendOverStream(
  mux: StreamMux,
  req: UpstreamRequest,
  violation: (reason: string) => void,
): Promise<UpstreamOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: UpstreamOutcome) => {
      if (settled) return;
      settled = true;
      if (outcome.kind !== "answer") req.signal.removeEventListener("abort", abort);
      resolve(outcome);
    };
    const lostOutcome = (code: number | undefined): UpstreamOutcome =>
      code === RESET.refused || !s?.delivered
        ? { kind: "not_delivered", error: code === undefined ? "connection lost" : "refused" }
        : { kind: "dropped", error: code === undefined ? "connection lost" : `reset ${code}` };
    const s: MuxStream | undefined = mux.open({
      head: (raw, end) => {
        const head = answerHeadOf(raw);
        if (!head) {
          violation("an answer head that is not one");
          return settle({ kind: "dropped", error: "malformed answer head" });
        }
        const answer = (body: Uint8Array | ReadableStream<Uint8Array> | null) =>
          settle({
            kind: "answer",
            status: head.status,
            statusText: "",
            headers: head.headers,
            body,
          });
        const length = Number(head.headers["content-length"] ?? NaN);
        if (req.method === "HEAD" || (end && length === 0)) {
          // Nothing more is read: bytes sent anyway are dropped and credited back by the reset.
          if (!s!.finished) s!.reset();
          release();
          return answer(null);
        }
        if (end || (Number.isInteger(length) && length >= 0 && length <= WHOLE_MAX_BYTES)) {
          // A whole answer is at most its frame (inline) or its declared length: a worker that
          // sends more is not believed (nor buffered without end).
          const limit = end ? Infinity : length;
          return void readWhole(s!, limit).then((bytes) => {
            release();
            answer(bytes);
          }, (err) => {
            if (err instanceof AnswerTooLong) {
              s!.reset(RESET.internal);
              violation("an answer longer than its content-length");
              return settle({ kind: "dropped", error: "answer longer than declared" });
            }
            settle(lostOutcome((err as { code?: number }).code));
          });
        }
        answer(streamOf(s!, release));
      },
      aborted: (code) => settle(lostOutcome(code)),
    });
    const release = () => req.signal.removeEventListener("abort", abort);
    const abort = () => {
      s?.reset(RESET.cancel);
      settle({ kind: "aborted" });
    };
    const head = { method: req.method, path: req.path, headers: req.headers };
    const headBytes = headSize(head);
    if (headBytes > MAX_HEAD_BYTES) {
      // Never opened: a head the worker would refuse closes its connection for everyone.
      s?.reset(RESET.cancel);
      return settle(headTooLarge(headBytes));
    }
    if (!s) return resolve({ kind: "not_delivered", error: "no stream available" });
    if (req.signal.aborted) return abort();
    req.signal.addEventListener("abort", abort, { once: true });
    s.sendHead(head, req.body?.chunks ?? [], true);
  });
}

/** An answer with more bytes than its head declared. */
class AnswerTooLong extends Error {}

/** Every chunk of the stream's answer, joined; rejects past `limit` bytes. */
async function readWhole(s: MuxStream, limit: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const chunk = await s.read();
    if (chunk === null) return joinChunks(parts, size);
    parts.push(chunk);
    size += chunk.length;
    if (size > limit) throw new AnswerTooLong();
  }
}

const utf8 = new TextEncoder();

/** The head's encoded size (JSON in UTF-8); encoded only when it might be near the bound. */
function headSize(head: unknown): number {
  const json = JSON.stringify(head);
  return json.length * 3 <= MAX_HEAD_BYTES ? json.length : utf8.encode(json).length;
}

/** The client's answer to a request whose path, query and headers do not fit one head. */
function headTooLarge(bytes: number): UpstreamOutcome {
  const { status, headers, text } = errorParts(
    invalidInput(
      `the request's path, query and forwarded headers take ${bytes} bytes; ` +
        `at most ${MAX_HEAD_BYTES} reach a worker`,
    ),
  );
  return { kind: "answer", status, statusText: "", headers, body: utf8.encode(text) };
}

/**
 * A large answer as a stream read only as fast as the client takes it: credit goes back to the
 * worker as chunks are read, so a slow client holds at most a stream window here. Cancelling it
 * (the client went away) resets the stream; a connection lost part-way errors it.
 */
function streamOf(s: MuxStream, release: () => void): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await s.read();
        if (chunk === null) {
          release();
          controller.close();
        } else controller.enqueue(chunk);
      } catch (err) {
        release();
        controller.error(err);
      }
    },
    cancel() {
      release();
      s.reset(RESET.cancel);
    },
  }, { highWaterMark: 0 });
}
