/**
 * Which queued items make the next batch. Requests are served in arrival order: a batch takes the
 * queue from its front, items of one request together, within the caps. One exception: when the
 * oldest request alone holds more than a batch, the batch is drawn from that request's items by
 * length (shortest first). The thread sorts a batch and cuts it into runs (sub_batches.ts), but a
 * batch of ~40 lengths taken in arrival order still pads its runs to their longest item: for
 * 256-text requests of the bench texts 5.9 % of the padded tokens (the worker's counters), 2.5 %
 * drawn by length, and the same session ran the by-length plan 3-6 % faster (in-process,
 * alternating). Mixing lengths across requests would pad less still, but a request then waits on
 * younger ones for its last items: with two large requests in flight, closed-loop throughput fell
 * by about 7 % (four alternating runs), so batches never reorder requests.
 */

/** A queued item as the selection sees it. */
export interface Candidate {
  /** Estimated tokens. */
  readonly tokens: number;
  /** The request it belongs to (compared by identity); a request's items are contiguous. */
  readonly request: unknown;
}

/** Caps of one batch. */
export interface BatchCaps {
  readonly maxItems: number;
  readonly maxRequests: number;
  /** Estimated tokens; the first item taken goes even when it alone is over. */
  readonly tokenBudget: number;
}

/** Indices (ascending) of the items of `queue` (oldest first) that make the next batch. */
export function selectBatch(queue: readonly Candidate[], caps: BatchCaps): number[] {
  const inOrder = frontLength(queue, caps);
  let ownItems = 0;
  while (ownItems < queue.length && queue[ownItems].request === queue[0].request) ownItems++;
  if (inOrder >= ownItems) return Array.from({ length: inOrder }, (_, i) => i);
  // The oldest request overflows the batch: its shortest items, as many as fit.
  const byLength = Array.from({ length: ownItems }, (_, i) => i);
  byLength.sort((a, b) => queue[a].tokens - queue[b].tokens || a - b);
  const taken = byLength.slice(0, frontLength(byLength.map((i) => queue[i]), caps));
  return taken.sort((a, b) => a - b);
}

/** How many items from the front of `queue` fit the caps (at least one when there is one). */
function frontLength(queue: readonly Candidate[], caps: BatchCaps): number {
  let take = 0;
  let tokens = 0;
  let requests = 0;
  while (take < queue.length && take < caps.maxItems) {
    const q = queue[take];
    const newRequest = take === 0 || q.request !== queue[take - 1].request;
    if (newRequest && requests === caps.maxRequests) break;
    if (take > 0 && tokens + q.tokens > caps.tokenBudget) break;
    if (newRequest) requests++;
    tokens += q.tokens;
    take++;
  }
  return take;
}
