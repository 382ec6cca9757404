/**
 * The router's end of the fleet link: authenticates worker sockets, keeps each worker's record
 * in the directory while its socket lives (router/fleet/connection.ts), and removes it the moment
 * the socket drops or the worker falls silent (a frozen peer never closes its socket, so silence
 * is checked too).
 */
import { errorResponse, ServiceError } from "@svc/shared/errors";
import { CLOSE_CODES } from "@svc/shared/fleet/protocol";
import { bearerToken } from "@svc/shared/http/secrets";
import { upgradeWebSocket } from "@svc/shared/http/upgrade";
import type { WorkerRecord } from "../directory/types.ts";
import { FleetConnection, type HubServices } from "./connection.ts";
import { FleetBudget } from "./budget.ts";
import type { FleetHubOptions, FleetSocket } from "./options.ts";
import type { StreamMux } from "@svc/shared/fleet/streams/mux";
import { CapRefusalLog, RAISE_HINT } from "./cap_log.ts";

export { REGISTRATION_TIMEOUT_MS } from "./connection.ts";
export type { FleetHubOptions } from "./options.ts";

/** Seconds without a pong before the server drops a fleet socket (Deno.serve's default). */
const FLEET_IDLE_TIMEOUT_S = 120;
/** A refused socket still open this long after its close frame is dropped. */
const CLOSE_GRACE_MS = 1000;
/** `readyState` of a closed socket. */
const CLOSED = 3;

/** Accepts worker sockets and mirrors their state into the directory. */
export class FleetHub {
  readonly #o: FleetHubOptions;
  readonly #now: () => number;
  readonly #conns = new Set<FleetConnection>();
  readonly #byWorker = new Map<string, FleetConnection>();
  readonly #services: HubServices;
  /** Timers that drop refused sockets whose close handshake does not finish, and the sockets. */
  readonly #closing = new Map<ReturnType<typeof setTimeout>, FleetSocket>();
  readonly #sweep: ReturnType<typeof setInterval>;

  constructor(opts: FleetHubOptions) {
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
    this.#services = {
      o: opts,
      now: this.#now,
      byWorker: this.#byWorker,
      forget: (conn) => this.#conns.delete(conn),
      budget: new FleetBudget(opts.caps, this.#now),
      capRefusals: new CapRefusalLog(opts.log, this.#now),
      terminateLater: (socket) => {
        const t = setTimeout(() => {
          this.#closing.delete(t);
          if (socket.readyState !== CLOSED) socket.terminate?.();
        }, CLOSE_GRACE_MS);
        this.#closing.set(t, socket);
      },
    };
    const every = Math.max(25, Math.min(250, Math.floor(opts.workerStaleMs / 4)));
    this.#sweep = setInterval(() => this.#sweepSilent(), every);
  }

  /** Number of registered worker sockets held here. */
  get registeredCount(): number {
    return this.#byWorker.size;
  }

  /**
   * An operator's drain: mark a worker whose socket this router holds as draining, so no new
   * request goes to it (status frames cannot undo it) while its in-flight work finishes. The
   * worker itself is not told and keeps running; a new registration (restart) serves again.
   * Undefined when no socket here holds the id (with `connId`: that connection of it, or with
   * `instanceHash` a connection of that process).
   */
  drainWorker(
    id: string,
    connId?: string,
    instanceHash?: string,
  ): Promise<WorkerRecord | undefined> {
    const conn = this.#byWorker.get(id);
    // A mark left for one connection (router/kv/drains.ts) does not drain a later one, unless
    // it is the same process (a worker linked to several instances).
    const sameProcess = instanceHash !== undefined &&
      conn?.record?.instance_hash === instanceHash;
    if (connId !== undefined && conn?.connId !== connId && !sameProcess) {
      return Promise.resolve(undefined);
    }
    return conn?.drain() ?? Promise.resolve(undefined);
  }

  /**
   * The request streams of worker `id`'s connection `connId` when this router holds it (the
   * connection transport), and how to close it when the worker breaks the protocol.
   */
  streamsOf(
    id: string,
    connId: string,
  ): { mux: StreamMux; violation(reason: string): void } | undefined {
    const conn = this.#byWorker.get(id);
    if (!conn || conn.connId !== connId || !conn.streams || conn.streams.closed) return undefined;
    return {
      mux: conn.streams,
      violation: (reason) => conn.refuse("invalidFrame", `request stream: ${reason}`),
    };
  }

  /**
   * The request streams of whichever connection of worker `id` this router holds (a relayed
   * request names the worker, not the connection: it may have reconnected here since).
   */
  streamsOfWorker(id: string): { mux: StreamMux; violation(reason: string): void } | undefined {
    const conn = this.#byWorker.get(id);
    return conn ? this.streamsOf(id, conn.connId) : undefined;
  }

  /** Handle `GET FLEET_PATH`: refuse without a valid token, else upgrade and serve the socket. */
  async handleUpgrade(req: Request, remote?: string): Promise<Response> {
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return errorResponse(
        new ServiceError("INVALID_INPUT", "this endpoint expects a WebSocket upgrade"),
      );
    }
    const token = bearerToken(req.headers.get("authorization"));
    if (!(await this.#o.workerTokens.matches(token))) {
      this.#o.metrics.connections.inc({ result: "unauthorized" });
      this.#o.log("warn", "worker connection refused: missing or invalid worker token", {
        remote,
        credentials: token === undefined ? "missing" : "invalid",
      });
      return errorResponse(new ServiceError("UNAUTHORIZED", "a valid worker token is required"));
    }
    const budget = this.#services.budget;
    if (budget.connectionsFull || budget.bytesFull) {
      // Refused before the upgrade: no register frame is read while the fleet is over a cap.
      this.#o.metrics.connections.inc({ result: "fleet_full" });
      const caps = this.#o.caps;
      const [cap, value, why] = budget.connectionsFull
        ? [
          "SVC_FLEET_MAX_CONNECTIONS",
          caps.maxConnections,
          `the router holds SVC_FLEET_MAX_CONNECTIONS (${caps.maxConnections}) fleet sockets ` +
          "already",
        ]
        : [
          "SVC_FLEET_MAX_STATUS_BYTES_PER_S",
          caps.maxBytesPerS,
          `the fleet's frames are over SVC_FLEET_MAX_STATUS_BYTES_PER_S (${caps.maxBytesPerS}) ` +
          "this second",
        ];
      this.#services.capRefusals.refused(cap, { remote, cap, [cap]: value, why });
      return errorResponse(
        new ServiceError("QUEUE_FULL", `${why}: ${RAISE_HINT}`, { retryAfterS: 1 }),
      );
    }
    const { socket, response } = upgradeWebSocket(req, { idleTimeoutS: FLEET_IDLE_TIMEOUT_S });
    // Deno's socket hands binary messages (request streams) as Blobs unless told otherwise.
    if (typeof WebSocket !== "undefined" && socket instanceof WebSocket) {
      socket.binaryType = "arraybuffer";
    }
    this.#conns.add(new FleetConnection(socket as unknown as FleetSocket, this.#services));
    return response;
  }

  /**
   * Close sockets that have been silent longer than the stale bound, on two sweeps in a row: a
   * router that was too busy to read its sockets (a stalled event loop) sees everyone silent on
   * its first look; the frames waiting meanwhile are read before the next sweep.
   */
  #sweepSilent(): void {
    const now = this.#now();
    for (const conn of this.#conns) {
      if (conn.closed || now - conn.lastFrameAt <= this.#o.workerStaleMs) {
        conn.silentSweeps = 0;
        continue;
      }
      if (++conn.silentSweeps < 2) continue;
      this.#o.log("warn", "worker silent, removing", {
        worker_id: conn.record?.id,
        silent_ms: now - conn.lastFrameAt,
      });
      // After a heartbeat timeout onclose may never fire: drop now, then close.
      conn.chain = conn.chain.then(() => conn.drop("heartbeat timeout"));
      conn.closeSocket(CLOSE_CODES.heartbeatTimeout, "heartbeat timeout");
    }
  }

  /** Close every socket (router shutdown) so workers reconnect elsewhere at once. */
  async close(): Promise<void> {
    clearInterval(this.#sweep);
    for (const [t, socket] of this.#closing) {
      clearTimeout(t);
      if (socket.readyState !== CLOSED) socket.terminate?.();
    }
    this.#closing.clear();
    const pending: Promise<void>[] = [];
    for (const conn of [...this.#conns]) {
      conn.closeSocket(CLOSE_CODES.goingAway, "router shutting down");
      conn.chain = conn.chain.then(() => conn.drop("router shutting down"));
      pending.push(conn.chain);
    }
    await Promise.all(pending);
  }
}
