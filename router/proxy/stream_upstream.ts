/**
 * A request to a worker over the connection it dialled (the connection transport): one stream of
 * the connection's multiplexer (shared/fleet/streams/mux.ts), answering with the same outcomes as
 * the HTTP client (upstream.ts), so forwarding applies the same rules whichever way it went. The
 * worker may have the whole request once every byte and the END were handed to the socket; a
 * connection lost before that, or a stream the worker refused unread, counts as never delivered
 * (one retry elsewhere); lost after it, before an answer, is `dropped` (502 `WORKER_LOST`).
 */
import { RESET } from "@svc/shared/fleet/streams/frames";
import type { MuxStream, StreamMux } from "@svc/shared/fleet/streams/mux";
import { joinChunks, type UpstreamOutcome, type UpstreamRequest } from "./upstream.ts";

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
          if (!end) s!.reset();
          release();
          return answer(null);
        }
        if (end || length <= WHOLE_MAX_BYTES) {
          return void readWhole(s!).then((bytes) => {
            release();
            answer(bytes);
          }, (err) => settle(lostOutcome((err as { code?: number }).code)));
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
    if (!s) return resolve({ kind: "not_delivered", error: "no stream available" });
    if (req.signal.aborted) return abort();
    req.signal.addEventListener("abort", abort, { once: true });
    const head = { method: req.method, path: req.path, headers: req.headers };
    s.sendHead(head, req.body?.chunks ?? [], true);
  });
}

/** Every chunk of the stream's answer, joined. */
async function readWhole(s: MuxStream): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const chunk = await s.read();
    if (chunk === null) return joinChunks(parts, size);
    parts.push(chunk);
    size += chunk.length;
  }
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
