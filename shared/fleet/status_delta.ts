/**
 * A worker's status frames as deltas: a model is listed only when something the worker reports
 * of it changed since the previous frame on this socket, and every model at least once every
 * `fullEvery` frames. The router keeps what it last heard of a model that a frame leaves out
 * (routers of every release do), so a fleet at rest costs the router small frames.
 */
import type { StatusMessage } from "./protocol.ts";

/** A status frame lists every model at least this often (frames; about once every 30 s). */
export const FULL_STATUS_EVERY = 30;

/** Turns full status frames into delta frames, one socket session at a time. */
export class StatusDeltas {
  readonly #fullEvery: number;
  readonly #random: () => number;
  /** What the last frame said of each model (its JSON), by name. */
  #sent = new Map<string, string>();
  /** Frames until the next one that lists every model (0: the next one). */
  #untilFull = 0;
  #first = true;

  constructor(fullEvery: number = FULL_STATUS_EVERY, random: () => number = Math.random) {
    this.#fullEvery = Math.max(1, fullEvery);
    this.#random = random;
  }

  /** A new socket session: the next frame lists every model. */
  reset(): void {
    this.#sent.clear();
    this.#untilFull = 0;
    this.#first = true;
  }

  /** The frame to send for the full status `full`: only models that changed, or all of them. */
  next(full: StatusMessage): StatusMessage {
    const all = this.#untilFull-- <= 0;
    if (all) {
      // After the first full frame the period starts at a random phase: workers that registered
      // together (a router restart) would otherwise send their full frames in the same second.
      this.#untilFull = this.#first
        ? Math.floor(this.#random() * this.#fullEvery)
        : this.#fullEvery - 1;
      this.#first = false;
    }
    const sent = new Map<string, string>();
    const models = [];
    for (const m of full.models) {
      const said = JSON.stringify(m);
      if (all || this.#sent.get(m.name) !== said) models.push(m);
      sent.set(m.name, said);
    }
    // Names the worker no longer reports are forgotten: they are new again if they come back.
    this.#sent = sent;
    return models.length === full.models.length ? full : { ...full, models };
  }
}
