/** Small helpers of frame handling: sizes, event-loop turns, model lists of status frames. */
import type { StatusMessage } from "@svc/shared/fleet/protocol";
import type { WorkerModel } from "../directory/types.ts";

/**
 * Apply a status frame's model states to the registered list (unknown names join the bundle):
 * one pass over each list. The caller caps the result, so repeated frames of new names cannot
 * grow a worker's list (and every later merge) without bound.
 */
export function mergeModels(
  prev: readonly WorkerModel[],
  msg: Pick<StatusMessage, "models">,
  bundle: string,
): WorkerModel[] {
  const byName = new Map(msg.models.map((m) => [m.name, m]));
  const out: WorkerModel[] = prev.map((m) => {
    const s = byName.get(m.name);
    if (!s) return m;
    byName.delete(m.name);
    return { ...s, name: m.name, bundle: m.bundle };
  });
  for (const s of byName.values()) out.push({ ...s, bundle });
  return out;
}

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
