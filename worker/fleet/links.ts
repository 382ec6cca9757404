/**
 * One worker linked to several router instances (`SVC_ROUTER_URL` with several URLs): a link per
 * instance, all with the same worker id and instance key, so every instance holds a socket of
 * its own to the worker and serves it, and losing one instance loses nothing.
 */
import type { FleetLink } from "./link.ts";

/** Several links seen as one: drain and close reach all, connected while any is. */
export class FleetLinks implements FleetLink {
  readonly #links: readonly FleetLink[];

  constructor(links: readonly FleetLink[]) {
    this.#links = links;
  }

  /** True while registered with at least one router instance. */
  get connected(): boolean {
    return this.#links.some((l) => l.connected);
  }

  /** Announce draining to every instance (each wait bounded by the link). */
  async drain(): Promise<void> {
    await Promise.all(this.#links.map((l) => l.drain()));
  }

  /** Close every link (each bounded by the link). */
  async close(): Promise<void> {
    await Promise.all(this.#links.map((l) => l.close()));
  }
}
