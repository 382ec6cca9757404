/**
 * A worker's model list cut into pieces that each fit one Deno KV value (64 KiB after V8
 * serialisation): 1000 names of 256 characters are about 300 KB, several values' worth. Sizes
 * are estimated from the JSON text at two bytes a character, an upper bound of V8's encoding of
 * these plain objects (one-byte strings take one byte a character, two-byte strings two).
 */
import type { WorkerModel } from "./types.ts";

/** Most estimated bytes in one chunk (KV's value limit is 65,536). */
export const CHUNK_BYTES = 60_000;

/** Most estimated bytes of chunks written in one atomic commit (KV's limit is 819,200). */
export const COMMIT_BYTES = 600_000;

/** The fields of a model other routers route by (the rest are this router's own statistics). */
export function storedModel(m: WorkerModel): WorkerModel {
  return {
    name: m.name,
    bundle: m.bundle,
    state: m.state,
    queue_depth: m.queue_depth,
    ...(m.revision === undefined ? {} : { revision: m.revision }),
  };
}

/** Upper bound of a value's serialised size. */
export function estimateBytes(value: unknown): number {
  return 2 * JSON.stringify(value).length + 16;
}

/** `models` (stored fields only) in chunks of at most {@link CHUNK_BYTES} each, in order. */
export function chunkModels(
  models: readonly WorkerModel[],
): { chunk: WorkerModel[]; bytes: number }[] {
  const out: { chunk: WorkerModel[]; bytes: number }[] = [];
  let cur: WorkerModel[] = [];
  let bytes = 16;
  for (const m of models) {
    const s = storedModel(m);
    const b = estimateBytes(s);
    if (cur.length > 0 && bytes + b > CHUNK_BYTES) {
      out.push({ chunk: cur, bytes });
      cur = [];
      bytes = 16;
    }
    cur.push(s);
    bytes += b;
  }
  if (cur.length > 0 || out.length === 0) out.push({ chunk: cur, bytes });
  return out;
}

/**
 * True when two model lists route the same: names, bundles, states and revisions in order (queue
 * depths and statistics may differ). A change here is written to KV at once.
 */
export function sameRouting(a: readonly WorkerModel[], b: readonly WorkerModel[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x.name !== y.name || x.bundle !== y.bundle || x.state !== y.state) return false;
    if (x.revision !== y.revision) return false;
  }
  return true;
}

/** True when two model lists have the same per-model queue depths (written with renewals). */
export function sameDepths(a: readonly WorkerModel[], b: readonly WorkerModel[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i].queue_depth !== b[i].queue_depth) return false;
  return true;
}
