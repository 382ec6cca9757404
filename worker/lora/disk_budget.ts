/**
 * What LoRA adapters may cost the local cache (`SVC_LORA_DISK_BYTES`), across every model of the
 * worker: any client can name any public adapter repository, so without a bound twenty adapters
 * of 7 MB filled 140 MB in seconds, never reclaimed. Adapters are kept on disk least recently
 * used first: past the budget, the files of the adapters used longest ago are deleted (an adapter
 * loaded in memory keeps serving; it is fetched again only if it has to load again). Adapters
 * being loaded are never deleted. What an earlier process left in the cache counts from the
 * first adapter on, by its files' modification times.
 */
import type { WeightStore } from "../weights/types.ts";

/** The files of an adapter repository (as the store fetches them). */
export type LoraFiles = Record<string, string>;

/** Options of {@link LoraDiskBudget}. */
export interface LoraDiskBudgetOptions {
  /** Largest total of adapter files in the local cache. */
  maxBytes: number;
  weights: WeightStore;
  /** The files of every adapter (their roles and repository paths). */
  files: LoraFiles;
  /** Repository path of the file that marks an adapter in the cache (its weights). */
  marker: string;
  now?: () => number;
  onEvent?: (event: string, fields: Record<string, unknown>) => void;
}

interface Entry {
  bytes: number;
  lastUsed: number;
  /** Loads in progress: never deleted meanwhile. */
  pins: number;
}

/** The adapters in the local cache, their sizes and last use; deletes past the budget. */
export class LoraDiskBudget {
  readonly #o: LoraDiskBudgetOptions;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();
  #ready: Promise<void> | undefined;
  /** Admissions and deletions run one after another. */
  #queue: Promise<void> = Promise.resolve();

  constructor(opts: LoraDiskBudgetOptions) {
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
  }

  /** Bytes of adapter files the local cache holds, as counted. */
  get usedBytes(): number {
    let total = 0;
    for (const e of this.#entries.values()) total += e.bytes;
    return total;
  }

  /** Adapters on disk, most recently used first. */
  get ids(): string[] {
    return [...this.#entries].sort((a, b) => b[1].lastUsed - a[1].lastUsed).map(([id]) => id);
  }

  /** A load of `id` starts: its files are not deleted until {@link release}. */
  pin(id: string): void {
    const e = this.#entries.get(id);
    if (e) e.pins++;
    else this.#entries.set(id, { bytes: 0, lastUsed: this.#now(), pins: 1 });
  }

  /** The load of `id` is over (loaded or failed). */
  release(id: string): void {
    const e = this.#entries.get(id);
    if (e && e.pins > 0) e.pins--;
  }

  /** A request used adapter `id`. */
  touch(id: string): void {
    const e = this.#entries.get(id);
    if (e) e.lastUsed = this.#now();
  }

  /** The files of `id` were deleted by someone else (a refused adapter). */
  forget(id: string): void {
    this.#entries.delete(id);
  }

  /**
   * The files of `id` are in place (fetched or found): count them, then delete the least
   * recently used other adapters until the total fits.
   */
  admit(id: string): Promise<void> {
    const run = this.#queue.then(async () => {
      this.#ready ??= this.#scan();
      await this.#ready;
      const bytes = await this.#o.weights.cachedBytes?.(id, "main", this.#o.files) ?? 0;
      const e = this.#entries.get(id) ?? { bytes: 0, lastUsed: this.#now(), pins: 0 };
      e.bytes = bytes;
      e.lastUsed = this.#now();
      this.#entries.set(id, e);
      await this.#evict();
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  async #evict(): Promise<void> {
    let used = this.usedBytes;
    const idle = [...this.#entries].filter(([, e]) => e.pins === 0 && e.bytes > 0)
      .sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [id, e] of idle) {
      if (used <= this.#o.maxBytes) break;
      await this.#o.weights.discard?.(id, "main", this.#o.files).catch(() => {});
      this.#entries.delete(id);
      used -= e.bytes;
      this.#o.onEvent?.("lora_files_deleted", {
        lora: id,
        bytes: e.bytes,
        disk_bytes: used,
        max_disk_bytes: this.#o.maxBytes,
      });
    }
  }

  /** Count what the cache already holds (an earlier process's adapters). */
  async #scan(): Promise<void> {
    const found = await this.#o.weights.listCached?.("main", this.#o.marker) ?? [];
    for (const f of found) {
      if (this.#entries.has(f.repo)) continue;
      const bytes = await this.#o.weights.cachedBytes?.(f.repo, "main", this.#o.files) ?? f.bytes;
      this.#entries.set(f.repo, { bytes, lastUsed: f.mtimeMs, pins: 0 });
    }
  }
}
