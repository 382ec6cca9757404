/**
 * Cached GPU readings for the status stream. nvidia-smi takes tens of milliseconds, far too slow
 * to run on every 200 ms tick, so readings are refreshed in the background at most every
 * `refreshMs` while someone asks for them (stale-while-revalidate), and never when nobody does.
 */
import { type GpuReading, queryGpus } from "../telemetry/gpu.ts";

/** Options of {@link GpuReadings}. */
export interface GpuReadingsOptions {
  /** Reads every GPU now (default: nvidia-smi through telemetry/gpu.ts). */
  query?: () => Promise<GpuReading[]>;
  /** Minimum age of a reading before it is refreshed. */
  refreshMs?: number;
  /** Pause after a failed query (a broken driver should not be hammered). */
  retryAfterFailureMs?: number;
  /** Told once per failure streak. */
  onError?: (err: unknown) => void;
}

/** The latest GPU readings, refreshed on demand. */
export class GpuReadings {
  readonly #query: () => Promise<GpuReading[]>;
  readonly #refreshMs: number;
  readonly #retryMs: number;
  readonly #onError: ((err: unknown) => void) | undefined;
  #readings: GpuReading[] = [];
  #fetchedAt = -Infinity;
  #failing = false;
  #inflight: Promise<void> | undefined;

  constructor(opts: GpuReadingsOptions = {}) {
    this.#query = opts.query ?? (() => queryGpus());
    this.#refreshMs = opts.refreshMs ?? 2000;
    this.#retryMs = opts.retryAfterFailureMs ?? 30_000;
    this.#onError = opts.onError;
  }

  /**
   * The readings. The first call waits for the first query (so a GPU machine never reports
   * itself as `cpu`); later calls answer from the cache and refresh it in the background.
   */
  async current(): Promise<readonly GpuReading[]> {
    this.latest();
    if (this.#fetchedAt === -Infinity) await this.#inflight;
    return this.#readings;
  }

  /**
   * The readings as they are now, without waiting (empty before the first query ends); starts a
   * refresh when one is due. For callers that must answer at once (the fleet's status frames).
   */
  latest(): readonly GpuReading[] {
    const age = performance.now() - this.#fetchedAt;
    if (age >= (this.#failing ? this.#retryMs : this.#refreshMs) && !this.#inflight) {
      this.#inflight = this.#refresh().finally(() => this.#inflight = undefined);
    }
    return this.#readings;
  }

  /** Resolves when no query is running (shutdown, tests). */
  async settle(): Promise<void> {
    await this.#inflight;
  }

  async #refresh(): Promise<void> {
    try {
      this.#readings = await this.#query();
      this.#failing = false;
    } catch (err) {
      if (!this.#failing) this.#onError?.(err);
      this.#failing = true;
    } finally {
      this.#fetchedAt = performance.now();
    }
  }
}
