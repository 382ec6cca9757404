/** Small helpers of frame handling: sizes, event-loop turns, model lists of status frames. */
import type { FleetHistogram, FleetModelStatus, StatusMessage } from "@svc/shared/fleet/protocol";
import type { WorkerModel } from "../directory/types.ts";

/**
 * Apply a status frame's model states to the registered list (unknown names join the bundle):
 * one pass over each list. A model the frame leaves out keeps what the router last heard (a
 * worker's delta frames list only what changed); when nothing changed, `prev` itself comes back,
 * so the caller can tell a frame that repeats what the router knows. The caller caps the result,
 * so repeated frames of new names cannot grow a worker's list (and every later merge) without
 * bound.
 */
export function mergeModels(
  prev: readonly WorkerModel[],
  msg: Pick<StatusMessage, "models">,
  bundle: string,
): readonly WorkerModel[] {
  if (msg.models.length === 0) return prev;
  const byName = new Map(msg.models.map((m) => [m.name, m]));
  let changed = false;
  const out: WorkerModel[] = prev.map((m) => {
    const s = byName.get(m.name);
    if (!s) return m;
    byName.delete(m.name);
    if (sameStatus(m, s)) return m;
    changed = true;
    return { ...s, name: m.name, bundle: m.bundle };
  });
  for (const s of byName.values()) out.push({ ...s, bundle });
  return changed || byName.size > 0 ? out : prev;
}

/** True when status `s` says of a model exactly what `m` holds (its absent fields too). */
function sameStatus(m: WorkerModel, s: FleetModelStatus): boolean {
  return m.state === s.state && m.queue_depth === s.queue_depth && m.device === s.device &&
    m.memory_bytes === s.memory_bytes && m.tokens_total === s.tokens_total &&
    m.revision === s.revision && sameHistogram(m.batch_sizes, s.batch_sizes);
}

function sameHistogram(a: FleetHistogram | undefined, b: FleetHistogram | undefined): boolean {
  if (a === b) return true;
  if (!a || !b || a.sum !== b.sum || a.count !== b.count) return false;
  return a.counts.length === b.counts.length && a.counts.every((c, i) => c === b.counts[i]);
}

/**
 * The status frame `data` with its `seq` number taken out (the one field that differs between
 * frames that repeat each other), or undefined when it has none in the form this encoder
 * writes (such a frame is compared in full, after validation).
 */
export function withoutSeq(data: string): string | undefined {
  const m = SEQ_RE.exec(data);
  return m ? data.slice(0, m.index + SEQ_KEY) + data.slice(m.index + m[0].length) : undefined;
}

/**
 * A `"seq":` key with a plain integer (at most 15 digits: a valid count): inside a JSON string a
 * quote is escaped, so this only matches a key.
 */
const SEQ_RE = /"seq":(?:0|[1-9][0-9]{0,14})(?=[,}])/;
const SEQ_KEY = '"seq":'.length;

/** Size of a binary frame (refused later as not JSON text, but counted). */
export function byteLength(data: unknown): number {
  const n = (data as { byteLength?: unknown; size?: unknown })?.byteLength ??
    (data as { size?: unknown })?.size;
  return typeof n === "number" ? n : 0;
}

/** Resolves on a later turn of the event loop (after pending I/O callbacks). */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * The `t` of a ping frame in the form workers write it (`{"type":"ping","t":<number>}`), read
 * without a decode; undefined for anything else (which is then decoded in full).
 */
export function pingTime(data: string): number | undefined {
  if (data.length > 64 || !data.startsWith(PING_START)) return undefined;
  const m = PING_RE.exec(data);
  return m ? Number(m[1]) : undefined;
}

const PING_START = '{"type":"ping","t":';
const PING_RE = /^\{"type":"ping","t":(-?(?:0|[1-9][0-9]{0,20})(?:\.[0-9]{1,20})?)\}$/;
