/**
 * Whether a stored answer's revision is still served: some worker of the pool that takes new
 * requests (not draining) announces a loaded model of that revision. A revision digests the
 * weights' content, the catalog entry and the worker's release (worker/registry/revision.ts), so
 * while one is announced, a worker of the pool would compute the same answer; once none is (new
 * weights, a new release, the model unloaded everywhere) the entry is not served, and the next
 * answer replaces it. The same revision coming back (a restart with the same files) makes the
 * entry valid again.
 */
import type { WorkerRecord } from "../directory/types.ts";
import { isServing } from "../pools/selection.ts";

const revisionSets = new WeakMap<WorkerRecord, ReadonlySet<string>>();

/** The revisions a worker announces, built once per record object (records are replaced). */
function revisionsOf(worker: WorkerRecord): ReadonlySet<string> {
  let set = revisionSets.get(worker);
  if (!set) {
    set = new Set(worker.models.flatMap((m) => m.revision === undefined ? [] : [m.revision]));
    revisionSets.set(worker, set);
  }
  return set;
}

/** True when a serving worker of (pool, bundle) announces `revision`. */
export function revisionServed(
  workers: readonly WorkerRecord[],
  pool: string,
  bundle: string,
  revision: string,
): boolean {
  for (const w of workers) {
    if (isServing(w, pool, bundle) && revisionsOf(w).has(revision)) return true;
  }
  return false;
}
