/**
 * The worker's HTTP server: the Hono app served with node:http (shared/http/node_server.ts), so
 * that a client that disconnects aborts its request's signal and stalled connections are closed
 * by the header and request timeouts of the settings.
 */
import type { Hono } from "hono";
import {
  type DirectHandler,
  type NodeHttpServer,
  serveNodeHttp,
} from "@svc/shared/http/node_server";
import type { HttpSettings } from "@svc/shared/config";
import { PeerLimits } from "@svc/shared/http/peer_limits";

/**
 * Serve a worker's routes on `hostname:port` (0: any free port) with the connection bounds of
 * `http`: the model operations as direct requests, everything else through the app.
 */
export function serveWorkerApp(
  worker: { app: Hono; direct: DirectHandler },
  http: HttpSettings,
  listen: { hostname: string; port: number },
  onListen?: (addr: { hostname: string; port: number }) => void,
): Promise<NodeHttpServer> {
  const { app } = worker;
  return serveNodeHttp((req, info) => app.fetch(req, info), {
    direct: worker.direct,
    hostname: listen.hostname,
    port: listen.port,
    headersTimeoutMs: http.headersTimeoutMs,
    requestTimeoutMs: http.requestTimeoutMs,
    peers: new PeerLimits(http.peers),
    onListen,
  });
}
