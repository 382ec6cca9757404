/**
 * Metric label values for adapters, from a bounded set: an adapter id becomes a label value only
 * once it has loaded (random ids never do) and while fewer than `max` ids have; every other
 * request with an adapter is labelled `other`, so series stay bounded whatever clients send.
 */

/** The label of requests whose adapter is not in the set. */
export const OTHER_LORA_LABEL = "other";

/** The bounded set of adapter label values of one process. */
export class LoraLabels {
  readonly #known = new Set<string>();

  constructor(readonly max: number) {}

  /** Admit a loaded adapter's id to the set, while there is room. */
  admit(id: string): void {
    if (this.#known.size < this.max) this.#known.add(id);
  }

  /** The label value for a request with adapter `id`. */
  of(id: string): string {
    return this.#known.has(id) ? id : OTHER_LORA_LABEL;
  }
}
