/**
 * Where the router agrees to send client requests: the policy for a worker's advertised URL.
 *
 * - Link-local and cloud metadata addresses (and names) are always refused, whatever the settings.
 * - With `SVC_WORKER_ALLOWED_NETWORKS` set, only IP literals inside it are accepted.
 * - Otherwise loopback and private addresses are accepted only when the router itself listens on
 *   loopback (a local stack); public addresses are accepted.
 * - Host names are resolved once, at registration, and every address they resolve to must pass.
 *   What a name resolves to later (DNS rebinding) is not checked again: only
 *   `SVC_WORKER_ALLOWED_NETWORKS` (IP literals) closes that gap. Where names cannot be resolved at
 *   all (no DNS API), they are accepted unchecked and a warning says so once.
 */
import { type AddressClass, classifyAddress, classifyHost } from "./addresses.ts";
import { hostAllowed, type Network, parseIp } from "./networks.ts";

/** What the policy depends on. */
export interface UrlPolicy {
  /** `SVC_WORKER_ALLOWED_NETWORKS`: when non-empty, only IP literals inside these. */
  allowedNetworks: readonly Network[];
  /** The router listens on loopback only: loopback and private workers are fine. */
  localStack: boolean;
  /** Networks accepted besides (the embedded worker of `deno task start`). */
  alsoAllowed: readonly Network[];
  /** Addresses of a host name; undefined when names cannot be resolved here. */
  resolve: ((name: string) => Promise<string[]>) | undefined;
}

/** The verdict: the URL as the router will use it, or why it is refused. */
export type UrlVerdict = { ok: true; url: string } | { ok: false; reason: string };

const ALLOWED_HINT = "list its network in SVC_WORKER_ALLOWED_NETWORKS";

/** Check an advertised URL (its shape already checked by the protocol schema). */
export async function checkAdvertisedUrl(raw: string, policy: UrlPolicy): Promise<UrlVerdict> {
  const u = new URL(raw);
  const url = `${u.protocol}//${u.host}`;
  const host = classifyHost(u.hostname);
  if (host.class === "forbidden") return refusedForever(u.hostname);
  if (policy.alsoAllowed.length > 0 && hostAllowed(u.hostname, policy.alsoAllowed)) {
    return { ok: true, url };
  }
  if (policy.allowedNetworks.length > 0) {
    if (hostAllowed(u.hostname, policy.allowedNetworks)) return { ok: true, url };
    return {
      ok: false,
      reason: `url host ${u.hostname} is not an IP address inside SVC_WORKER_ALLOWED_NETWORKS`,
    };
  }
  if (host.kind === "ip" || host.class !== undefined) {
    return classVerdict(u.hostname, host.class!, policy, url);
  }
  if (!policy.resolve) return { ok: true, url };
  let addrs: string[];
  try {
    addrs = await policy.resolve(host.name);
  } catch {
    addrs = [];
  }
  if (addrs.length === 0) {
    return { ok: false, reason: `url host ${u.hostname} does not resolve (or not in time)` };
  }
  let worst: AddressClass = "public";
  for (const a of addrs) {
    const addr = parseIp(a);
    if (!addr) continue;
    const c = classifyAddress(addr);
    if (c === "forbidden") return refusedForever(`${u.hostname} (${a})`);
    if (c === "loopback" || (c === "private" && worst === "public")) worst = c;
  }
  return classVerdict(`${u.hostname} (${addrs.join(", ")})`, worst, policy, url);
}

function classVerdict(
  what: string,
  c: AddressClass,
  policy: UrlPolicy,
  url: string,
): UrlVerdict {
  if (c === "forbidden") return refusedForever(what);
  if (c === "public" || policy.localStack) return { ok: true, url };
  return {
    ok: false,
    reason: `url host ${what} is a ${c} address: accepted only when the router listens on ` +
      `loopback, or ${ALLOWED_HINT}`,
  };
}

function refusedForever(what: string): UrlVerdict {
  return {
    ok: false,
    reason: `url host ${what} is a link-local or cloud metadata address, never accepted ` +
      "(not even with SVC_WORKER_ALLOWED_NETWORKS)",
  };
}

/** Longest a registration waits for a host name to resolve. */
const RESOLVE_TIMEOUT_MS = 2000;

/**
 * A resolver over `Deno.resolveDns` (A and AAAA), or undefined where the runtime has none. A
 * name whose lookups fail resolves to nothing (refused).
 */
export function dnsResolver(): ((name: string) => Promise<string[]>) | undefined {
  if (typeof Deno === "undefined" || typeof Deno.resolveDns !== "function") return undefined;
  return async (name) => {
    const signal = AbortSignal.timeout(RESOLVE_TIMEOUT_MS);
    const lookups = (["A", "AAAA"] as const).map((t) =>
      Deno.resolveDns(name, t, { signal }).catch(() => [] as string[])
    );
    return (await Promise.all(lookups)).flat();
  };
}
