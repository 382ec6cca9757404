/**
 * Learning of changes other router instances made in Deno KV, without reading everything: each
 * kind of shared state has a change counter (a KvU64 its writers sum), which this watches (Deno
 * Deploy, a `denokv` server, one process) and polls with one small read (processes sharing a
 * local file are not told of each other's writes).
 */
import type { Logger } from "@svc/shared/log";

/** Watches and polls one counter key; calls `onChange` when it moved (coalesced, one at a time). */
export class ChangeFeed {
  readonly #kv: Deno.Kv;
  readonly #key: Deno.KvKey;
  readonly #onChange: () => Promise<void>;
  readonly #log: Logger;
  readonly #timer: ReturnType<typeof setInterval>;
  #reader: ReadableStreamDefaultReader<Deno.KvEntryMaybe<unknown>[]> | undefined;
  #seen: string | null | undefined;
  readonly #everyMs: number;
  #lastRun = -Infinity;
  #running: Promise<void> | null = null;
  #again = false;
  #closed = false;

  constructor(opts: {
    kv: Deno.Kv;
    key: Deno.KvKey;
    pollMs: number;
    /** Also run `onChange` when it has not run for this long (default: only on changes). */
    everyMs?: number;
    onChange: () => Promise<void>;
    log: Logger;
  }) {
    this.#everyMs = opts.everyMs ?? Infinity;
    this.#kv = opts.kv;
    this.#key = opts.key;
    this.#onChange = opts.onChange;
    this.#log = opts.log;
    this.#timer = setInterval(() => this.#poll(), opts.pollMs);
    try {
      this.#reader = this.#kv.watch([this.#key]).getReader();
      this.#watch(this.#reader);
    } catch {
      // No watch here: polling alone.
    }
  }

  /** Mark the counter moved by a write of ours (summing it is the writer's job). */
  static bump(op: Deno.AtomicOperation, key: Deno.KvKey): Deno.AtomicOperation {
    return op.sum(key, 1n);
  }

  async #watch(reader: ReadableStreamDefaultReader<Deno.KvEntryMaybe<unknown>[]>): Promise<void> {
    try {
      while (!this.#closed) {
        const step = await reader.read();
        if (step.done) return;
        if ((step.value[0]?.versionstamp ?? null) !== this.#seen) this.update();
      }
    } catch (err) {
      if (!this.#closed) this.#log("warn", "kv change feed: watch ended", { error: String(err) });
    }
  }

  async #poll(): Promise<void> {
    if (this.#closed) return;
    try {
      if (performance.now() - this.#lastRun >= this.#everyMs) return await this.update();
      const e = await this.#kv.get(this.#key);
      if (e.versionstamp !== this.#seen) await this.update();
    } catch (err) {
      this.#log("warn", "kv change feed: poll failed", { error: String(err) });
    }
  }

  /** Read the counter and run `onChange` (now, or once more after the run in progress). */
  update(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          if (this.#closed) return;
          this.#lastRun = performance.now();
          // The counter first: a change after this read moves it again, and is read next time.
          this.#seen = (await this.#kv.get(this.#key)).versionstamp;
          await this.#onChange();
        } while (this.#again);
      } catch (err) {
        this.#log("warn", "kv change feed: update failed", { error: String(err) });
      } finally {
        this.#running = null;
      }
    })();
    return this.#running;
  }

  /** Stop watching and polling. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#reader?.cancel().catch(() => {});
    await this.#running;
  }
}
