/**
 * API keys on the status streams from a browser. A browser's WebSocket cannot send an
 * `Authorization` header, and a key must never go in a URL (proxies, history and access logs
 * keep URLs). So the dashboards offer two subprotocols: {@link STREAM_PROTOCOL}, which the server
 * answers with, and `svc.bearer.<base64url key>`, which only carries the key and is never echoed.
 * Everything else (tools, tests, proxies that can) keeps sending `Authorization: Bearer`.
 */

/** The subprotocol a dashboard's status socket offers and the server answers with. */
export const STREAM_PROTOCOL = "svc.status";
/** Prefix of the subprotocol that carries a key: the rest is the key, base64url (no padding). */
export const KEY_PROTOCOL_PREFIX = "svc.bearer.";

/** The subprotocols offered by a request (`Sec-WebSocket-Protocol`, comma-separated). */
export function offeredProtocols(header: string | null | undefined): string[] {
  return header ? header.split(",").map((p) => p.trim()).filter((p) => p.length > 0) : [];
}

/** The subprotocol to answer with: {@link STREAM_PROTOCOL} when offered, else none. */
export function answeredProtocol(offered: Iterable<string>): string | undefined {
  for (const p of offered) if (p === STREAM_PROTOCOL) return p;
  return undefined;
}

/** The key carried by an offered `svc.bearer.*` subprotocol, or undefined. */
export function protocolKey(header: string | null | undefined): string | undefined {
  const p = offeredProtocols(header).find((x) => x.startsWith(KEY_PROTOCOL_PREFIX));
  if (!p) return undefined;
  const b64 = p.slice(KEY_PROTOCOL_PREFIX.length);
  if (!/^[A-Za-z0-9_-]{1,1024}$/.test(b64)) return undefined;
  try {
    const bin = atob(b64.replace(/-/g, "+").replace(/_/g, "/"));
    return new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(bin, (c) => c.charCodeAt(0)),
    );
  } catch {
    return undefined;
  }
}

/** The subprotocol value a client offers to carry `key` (what the dashboards' script builds). */
export function keyProtocol(key: string): string {
  const bytes = new TextEncoder().encode(key);
  const b64 = btoa(String.fromCharCode(...bytes));
  return KEY_PROTOCOL_PREFIX + b64.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * The `Authorization` value a request presents: its own header, or, on a WebSocket upgrade
 * only, `Bearer <key>` from a `svc.bearer.*` subprotocol.
 */
export function presentedAuthorization(
  headers: { get(name: string): string | null | undefined },
): string | undefined {
  const own = headers.get("authorization");
  if (own) return own;
  if (headers.get("upgrade")?.toLowerCase() !== "websocket") return undefined;
  const key = protocolKey(headers.get("sec-websocket-protocol"));
  return key === undefined ? undefined : `Bearer ${key}`;
}
