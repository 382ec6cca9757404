/**
 * What an address or host name is, for the advertised-URL policy: an address the router must
 * never send client requests to (link-local, cloud metadata, unspecified, multicast), loopback,
 * a private range, or a public address. IPv6 forms that carry an IPv4 address (IPv4-compatible,
 * NAT64, 6to4) are as restricted as the address they carry.
 */
import { inNetworks, type IpAddress, type Network, parseCidr, parseIp } from "./networks.ts";

/** The classes, most restricted first. */
export type AddressClass = "forbidden" | "loopback" | "private" | "public";

const RANK: Record<AddressClass, number> = { forbidden: 3, loopback: 2, private: 1, public: 0 };

function cidrs(list: readonly string[]): Network[] {
  return list.map((c) => parseCidr(c)!);
}

/** Never a worker: link-local (cloud metadata at 169.254.169.254), metadata services, and more. */
const FORBIDDEN = cidrs([
  "0.0.0.0/8", // "this network": 0.0.0.0 reaches the router's own machine
  "169.254.0.0/16", // link-local: AWS, GCP, Azure, OpenStack metadata; ECS credentials
  "100.100.100.200/32", // Alibaba Cloud metadata
  "168.63.129.16/32", // Azure platform endpoint
  "224.0.0.0/4", // multicast
  "240.0.0.0/4", // reserved, broadcast
  "::/128",
  "fe80::/10", // link-local
  "fd00:ec2::254/128", // AWS metadata over IPv6
  "ff00::/8", // multicast
]);

const LOOPBACK = cidrs(["127.0.0.0/8", "::1/128"]);

const PRIVATE = cidrs([
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "100.64.0.0/10", // carrier-grade NAT
  "198.18.0.0/15",
  "fc00::/7", // unique local
  "fec0::/10", // site-local (deprecated)
]);

/** Host names of metadata services (resolved only inside their cloud, so never resolved here). */
const METADATA_NAMES = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.azure.com",
  "metadata.tencentyun.com",
]);

/** Names that mean this machine. */
function isLoopbackName(name: string): boolean {
  return name === "localhost" || name.endsWith(".localhost") ||
    name === "localhost.localdomain" || name === "ip6-localhost" || name === "ip6-loopback";
}

/** The IPv4 address an IPv6 address carries (IPv4-compatible, NAT64, 6to4), if any. */
function embeddedIpv4(addr: IpAddress): IpAddress | undefined {
  if (addr.family !== 6) return undefined;
  const v = addr.value;
  const low32 = v & 0xffffffffn;
  if (v >> 32n === 0n && low32 > 1n) return { family: 4, value: low32 }; // ::a.b.c.d
  if (v >> 32n === 0x0064ff9b0000000000000000n) return { family: 4, value: low32 }; // 64:ff9b::/96
  if (v >> 112n === 0x2002n) return { family: 4, value: (v >> 80n) & 0xffffffffn }; // 2002::/16
  return undefined;
}

function classOf(addr: IpAddress): AddressClass {
  if (inNetworks(addr, FORBIDDEN)) return "forbidden";
  if (inNetworks(addr, LOOPBACK)) return "loopback";
  if (inNetworks(addr, PRIVATE)) return "private";
  return "public";
}

/** The class of an IP address (with any IPv4 address it carries). */
export function classifyAddress(addr: IpAddress): AddressClass {
  const own = classOf(addr);
  const inner = embeddedIpv4(addr);
  if (!inner) return own;
  const carried = classOf(inner);
  return RANK[carried] > RANK[own] ? carried : own;
}

/** What a URL's host is: an IP literal (classified) or a name (classified when it is known). */
export type HostKind =
  | { kind: "ip"; addr: IpAddress; class: AddressClass }
  | { kind: "name"; name: string; class: AddressClass | undefined };

/** Classify `hostname` as `URL.hostname` spells it (lower case, IPv6 in brackets). */
export function classifyHost(hostname: string): HostKind {
  const bare = hostname.replace(/^\[(.*)\]$/, "$1");
  const addr = parseIp(bare);
  if (addr) return { kind: "ip", addr, class: classifyAddress(addr) };
  const name = bare.toLowerCase().replace(/\.$/, "");
  if (METADATA_NAMES.has(name)) return { kind: "name", name, class: "forbidden" };
  if (isLoopbackName(name)) return { kind: "name", name, class: "loopback" };
  return { kind: "name", name, class: undefined };
}

/** True when a listen address is loopback only (a local stack). */
export function isLoopbackListen(host: string): boolean {
  const h = classifyHost(host.includes(":") && !host.startsWith("[") ? `[${host}]` : host);
  return h.class === "loopback";
}
