/**
 * The router's HTTP server. Two implementations behind one shape: node:http
 * (shared/http/node_server.ts), where a client that disconnects aborts its request's signal, so
 * the upstream fetch to the worker is cancelled and the worker drops the work, and where stalled
 * connections are closed by the header and request timeouts; and `Deno.serve`, the only server
 * on Deno Deploy. In Deno 2.9.5 `Deno.serve` fires no request signal for a client with a body of
 * about 1 KB or more that goes away, and cannot close a connection whose body stalls.
 */
import type { HttpSettings } from "@svc/shared/config";
import { errorResponse } from "@svc/shared/errors";
import { PeerLimits } from "@svc/shared/http/peer_limits";
import type { BodySource } from "@svc/shared/http/body_source";

const noop = () => {};

/** What the app receives beside the request (Hono's `c.env`). */
export interface RouterServeInfo {
  readonly remoteAddr: { hostname: string; port: number };
  /** Settles once the answer has been sent or abandoned (absent on old runtimes). */
  readonly completed?: Promise<void>;
  /** node:http: the body as it arrives, for `readBodyLimited` (Deno.serve: the request's stream). */
  readonly body?: BodySource;
}

/** A listening server. */
export interface RouterHttpServer {
  addr: { hostname: string; port: number };
  finished: Promise<void>;
  shutdown(): Promise<void>;
  /** Which implementation serves. */
  kind: "node" | "deno";
}

/** Connections still open this long after shutdown began are closed. */
const SHUTDOWN_GRACE_MS = 2000;

/** Which server to use: `auto` is `deno` on Deno Deploy and `node` elsewhere. */
export type ServerKind = "auto" | "node" | "deno";

/** True on Deno Deploy (it sets DENO_DEPLOYMENT_ID in every isolate). */
function onDenoDeploy(): boolean {
  try {
    return Deno.env.get("DENO_DEPLOYMENT_ID") !== undefined;
  } catch {
    return false; // no env permission: not a Deploy isolate either
  }
}

/** Serve `handler` on `listen` with the connection bounds of `http`; resolves once listening. */
export async function serveRouter(
  handler: (req: Request, info: RouterServeInfo) => Response | Promise<Response>,
  listen: { host: string; port: number },
  http: HttpSettings,
  kind: ServerKind,
): Promise<RouterHttpServer> {
  const useNode = kind === "node" || (kind === "auto" && !onDenoDeploy());
  const peers = new PeerLimits(http.peers);
  if (useNode) {
    // Loaded only here: a Deploy isolate never pulls the node:http server or `ws` in.
    const { serveNodeHttp } = await import("@svc/shared/http/node_server");
    const server = await serveNodeHttp(handler, {
      hostname: listen.host,
      port: listen.port,
      headersTimeoutMs: http.headersTimeoutMs,
      requestTimeoutMs: http.requestTimeoutMs,
      streamResponses: true,
      peers,
    });
    return {
      addr: server.addr,
      finished: server.finished,
      // Streams and clients that stop reading must not hold the router's exit.
      shutdown: () => server.shutdown(SHUTDOWN_GRACE_MS),
      kind: "node",
    };
  }
  let resolveAddr: (a: Deno.NetAddr) => void = () => {};
  const listening = new Promise<Deno.NetAddr>((r) => (resolveAddr = r));
  const server = Deno.serve({
    port: listen.port,
    hostname: listen.host,
    onListen: (addr) => resolveAddr(addr as Deno.NetAddr),
  }, (req, info) => {
    const remoteAddr = info.remoteAddr as Deno.NetAddr;
    // Older runtimes (and some platforms) have no `completed`: proxying then bounds less.
    const completed = (info as Partial<Deno.ServeHandlerInfo>).completed;
    // Requests in flight per peer (connections cannot be counted under Deno.serve).
    const release = peers.caps.maxInflight > 0 && completed
      ? peers.enter(remoteAddr.hostname)
      : noop;
    if (!release) return errorResponse(peers.refusal());
    completed?.then(release, release);
    return handler(req, { remoteAddr, completed });
  });
  const addr = await listening;
  return {
    addr: { hostname: addr.hostname, port: addr.port },
    finished: server.finished,
    shutdown: () => server.shutdown(),
    kind: "deno",
  };
}
