/**
 * Allowed networks for advertised worker URLs (`SVC_WORKER_ALLOWED_NETWORKS`): CIDR blocks,
 * IPv4 or IPv6. With a list set, a worker may only advertise an IP literal inside one of them;
 * host names are refused, since what a name resolves to can change after the check (and
 * resolving is not always possible on the edge).
 */

/** One parsed CIDR block. */
export interface Network {
  /** 4 or 6. */
  family: 4 | 6;
  /** Network address as an integer of 32 or 128 bits. */
  base: bigint;
  prefix: number;
}

/** Parse `a.b.c.d/n` or `x:y::z/n`; undefined when it is not a CIDR block. */
export function parseCidr(text: string): Network | undefined {
  const slash = text.indexOf("/");
  if (slash <= 0) return undefined;
  const addr = parseIp(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!addr || !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  const bits = addr.family === 4 ? 32 : 128;
  if (prefix > bits) return undefined;
  return { family: addr.family, base: addr.value & mask(prefix, bits), prefix };
}

/** Why `text` is not a CIDR block (a phrase), or undefined when it is one. */
export function cidrProblem(text: string): string | undefined {
  return parseCidr(text) ? undefined : "entries must be CIDR blocks such as 10.0.0.0/8 or fd00::/8";
}

/**
 * True when the host of a normalised URL (`URL.hostname`: IPv6 in brackets) is an IP literal
 * inside one of `networks`. IPv4-mapped IPv6 addresses count as their IPv4 address.
 */
export function hostAllowed(hostname: string, networks: readonly Network[]): boolean {
  const addr = parseIp(hostname.replace(/^\[(.*)\]$/, "$1"));
  return addr !== undefined && inNetworks(addr, networks);
}

/** True when `addr` is inside one of `networks`. */
export function inNetworks(addr: IpAddress, networks: readonly Network[]): boolean {
  return networks.some((n) => {
    if (n.family !== addr.family) return false;
    const bits = n.family === 4 ? 32 : 128;
    return (addr.value & mask(n.prefix, bits)) === n.base;
  });
}

/** An IP address: family and value (32 or 128 bits). */
export interface IpAddress {
  family: 4 | 6;
  value: bigint;
}

/** An IP literal as family and integer value (IPv4-mapped IPv6 as IPv4). */
export function parseIp(text: string): IpAddress | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return { family: 4, value: v4 };
  const v6 = parseIpv6(text);
  if (v6 === undefined) return undefined;
  if (v6 >> 32n === 0xffffn) return { family: 4, value: v6 & 0xffffffffn };
  return { family: 6, value: v6 };
}

function parseIpv4(text: string): bigint | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return undefined;
    value = (value << 8n) | BigInt(Number(p));
  }
  return value;
}

function parseIpv6(text: string): bigint | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(text)) return undefined;
  let groups: string[];
  const gap = text.indexOf("::");
  if (gap >= 0) {
    if (text.indexOf("::", gap + 1) >= 0) return undefined;
    const head = text.slice(0, gap) ? text.slice(0, gap).split(":") : [];
    const tail = text.slice(gap + 2) ? text.slice(gap + 2).split(":") : [];
    const tailWidth = tail.length + (tail.at(-1)?.includes(".") ? 1 : 0);
    const missing = 8 - head.length - tailWidth;
    if (missing < 1) return undefined;
    groups = [...head, ...Array(missing).fill("0"), ...tail];
  } else {
    groups = text.split(":");
  }
  // A trailing dotted IPv4 part stands for the last two groups.
  const last = groups.at(-1) ?? "";
  if (last.includes(".")) {
    const v4 = parseIpv4(last);
    if (v4 === undefined) return undefined;
    groups = [...groups.slice(0, -1), (v4 >> 16n).toString(16), (v4 & 0xffffn).toString(16)];
  }
  if (groups.length !== 8) return undefined;
  let value = 0n;
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    value = (value << 16n) | BigInt(parseInt(g, 16));
  }
  return value;
}

function mask(prefix: number, bits: number): bigint {
  if (prefix === 0) return 0n;
  return ((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix);
}
