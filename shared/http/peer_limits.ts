/**
 * Per-peer caps for servers on public endpoints: open connections (`SVC_MAX_CONNECTIONS_PER_PEER`)
 * and requests in flight (`SVC_MAX_INFLIGHT_PER_PEER`) from one client address. Both are off by
 * default: behind a load balancer or reverse proxy every client has the proxy's address, and a
 * worker behind the router sees only the router. An IPv6 client counts by its /64 (one machine
 * usually holds a whole /64); IPv4-mapped addresses count as their IPv4 address.
 */
import { ServiceError } from "../errors.ts";

/** The caps (0: no cap). */
export interface PeerCaps {
  maxConnections: number;
  maxInflight: number;
}

/** The key a client address counts under. */
export function peerKey(address: string): string {
  const a = address.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(a);
  if (mapped) return mapped[1];
  if (!a.includes(":")) return a;
  // The first four groups of the address, `::` expanded.
  const [head, tail = ""] = a.split("::");
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = a.includes("::") ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t] : h;
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}

/** Counts per peer against the caps. */
export class PeerLimits {
  readonly caps: PeerCaps;
  readonly #connections = new Map<string, number>();
  readonly #inflight = new Map<string, number>();

  constructor(caps: PeerCaps) {
    this.caps = caps;
  }

  /** True when a cap is set (a server with no caps skips the bookkeeping). */
  get active(): boolean {
    return this.caps.maxConnections > 0 || this.caps.maxInflight > 0;
  }

  /** A connection from `address` opened: its release, or undefined when over the cap. */
  connect(address: string): (() => void) | undefined {
    return take(this.#connections, peerKey(address), this.caps.maxConnections);
  }

  /** A request from `address` starts: its release, or undefined when over the cap. */
  enter(address: string): (() => void) | undefined {
    return take(this.#inflight, peerKey(address), this.caps.maxInflight);
  }

  /** The 429 of a request over the in-flight cap. */
  refusal(): ServiceError {
    return new ServiceError(
      "TOO_MANY_REQUESTS",
      `more than ${this.caps.maxInflight} requests in flight from this address ` +
        "(SVC_MAX_INFLIGHT_PER_PEER)",
    );
  }
}

function take(counts: Map<string, number>, key: string, max: number): (() => void) | undefined {
  if (max <= 0) return () => {};
  const n = counts.get(key) ?? 0;
  if (n >= max) return undefined;
  counts.set(key, n + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (counts.get(key) ?? 1) - 1;
    if (left <= 0) counts.delete(key);
    else counts.set(key, left);
  };
}
