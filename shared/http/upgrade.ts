/**
 * WebSocket upgrades that work under either server: `Deno.serve` (the router) answers with
 * `Deno.upgradeWebSocket`; the node:http server (the worker, shared/http/node_server.ts) registers
 * an acceptor for each upgrade request it hands to the app. This module imports no server, so
 * code that runs on Deno Deploy can use it without pulling node:http or `ws` in.
 */

/** What a status stream needs of a socket (the DOM WebSocket and `ws` sockets both have it). */
export interface StreamSocket {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: string): void;
  /**
   * Send UTF-8 bytes as a text message without copying them (present where the socket can:
   * `ws` under the node:http server), so many clients share one encoded frame.
   */
  sendText?(data: Uint8Array): void;
  /** Stop reading from the peer (a socket being closed; `ws` under the node:http server). */
  pauseReading?(): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open" | "close" | "error", listener: () => void): void;
}

/** Options of an upgrade. */
export interface UpgradeOptions {
  /** Seconds without a pong before the server drops the client. */
  idleTimeoutS: number;
  /**
   * The subprotocol to answer with (one the client offered). The node:http server decides the
   * same way on its own (ws_auth.ts `answeredProtocol`), so it may ignore this.
   */
  protocol?: string;
}

/** An accepted upgrade: the socket, and the response the handler returns. */
export interface Upgraded {
  socket: StreamSocket;
  response: Response;
}

/** Accepts the upgrade of one request (registered by a server that is not Deno.serve). */
export type UpgradeAcceptor = (opts: UpgradeOptions) => Upgraded;

const acceptors = new WeakMap<Request, UpgradeAcceptor>();

/** Register how `req`'s upgrade is accepted (called by the node:http server). */
export function registerUpgrade(req: Request, accept: UpgradeAcceptor): void {
  acceptors.set(req, accept);
}

/** Upgrade `req` to a WebSocket, with whichever server received it. */
export function upgradeWebSocket(req: Request, opts: UpgradeOptions): Upgraded {
  const accept = acceptors.get(req);
  if (accept) {
    acceptors.delete(req);
    return accept(opts);
  }
  const { socket, response } = Deno.upgradeWebSocket(req, {
    idleTimeout: opts.idleTimeoutS,
    ...(opts.protocol ? { protocol: opts.protocol } : {}),
  });
  return { socket, response };
}
