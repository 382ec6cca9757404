/**
 * Fleet views stay bounded whatever workers announce: `/health`, `/ws/cluster-status` and
 * `/ws/status` list at most `maxWorkers` workers and `maxModels` model entries (the fleet's list,
 * and every worker's lists together). Counts (`worker_count`, `cluster`) stay whole; `truncated`
 * says how many entries were left out. Without it, twenty token holders announcing a thousand
 * long names each made every view (and every stream frame) tens of megabytes.
 */

/** `SVC_FLEET_VIEW_MAX_WORKERS` and `SVC_FLEET_VIEW_MAX_MODELS`. */
export interface ViewLimits {
  maxWorkers: number;
  maxModels: number;
}

/** Entries a view left out. */
export interface Truncation {
  workers: number;
  models: number;
}

/** What a bounded view looks like: workers with model lists, and the fleet's model lists. */
interface FleetView<W> {
  workers: W[];
  models: unknown[];
  loaded_models: string[];
}

/** A worker entry with model lists. */
interface WorkerEntry {
  loaded_models: string[];
  models: unknown[];
}

/** `view` within `limits` (a copy; `truncated` added when anything was left out). */
export function boundView<W extends WorkerEntry, V extends FleetView<W>>(
  view: V,
  limits: ViewLimits,
): V & { truncated?: Truncation } {
  const cut: Truncation = { workers: 0, models: 0 };
  const workers = view.workers.slice(0, limits.maxWorkers);
  cut.workers = view.workers.length - workers.length;
  let left = limits.maxModels;
  const take = <T>(list: T[]): T[] => {
    const kept = list.slice(0, Math.max(0, left));
    left -= kept.length;
    cut.models += list.length - kept.length;
    return kept;
  };
  const bounded = workers.map((w) => {
    if (w.models.length + w.loaded_models.length === 0) return w;
    return { ...w, models: take(w.models), loaded_models: take(w.loaded_models) };
  });
  const models = view.models.slice(0, limits.maxModels);
  const loaded = view.loaded_models.slice(0, limits.maxModels);
  cut.models += view.models.length - models.length + view.loaded_models.length - loaded.length;
  const out = { ...view, workers: bounded, models, loaded_models: loaded };
  return cut.workers + cut.models > 0 ? { ...out, truncated: cut } : out;
}

/** A status-stream message: models, each with its per-worker states. */
interface StatusView<M> {
  models: M[];
  loaded_models: string[];
}

/** `/ws/status`'s message within `limits` (per-model worker lists share the model budget). */
export function boundStatus<M extends { workers?: unknown[] }, V extends StatusView<M>>(
  view: V,
  limits: ViewLimits,
): V & { truncated?: Truncation } {
  const cut: Truncation = { workers: 0, models: 0 };
  let left = limits.maxModels;
  const models = view.models.slice(0, limits.maxModels).map((m) => {
    if (!m.workers) return m;
    const room = Math.max(0, Math.min(left, limits.maxWorkers));
    const workers = m.workers.slice(0, room);
    left -= workers.length;
    cut.workers += m.workers.length - workers.length;
    return workers.length === m.workers.length ? m : { ...m, workers };
  });
  const loaded = view.loaded_models.slice(0, limits.maxModels);
  cut.models = view.models.length - models.length + view.loaded_models.length - loaded.length;
  const out = { ...view, models, loaded_models: loaded };
  return cut.workers + cut.models > 0 ? { ...out, truncated: cut } : out;
}
