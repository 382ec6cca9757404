/**
 * The router's end of the fleet link: authenticates worker sockets, keeps each worker's record
 * in the directory while its socket lives, and removes it the moment the socket drops or the
 * worker falls silent (a frozen peer never closes its socket, so silence is checked too).
 */
import { errorResponse, ServiceError } from "@svc/shared/errors";
import {
  CLOSE_CODES,
  decodeWorkerMessage,
  encodeMessage,
  type ErrorMessage,
  FLEET_PROTOCOL_VERSION,
  type RegisterMessage,
  type RouterMessage,
  type StatusMessage,
} from "@svc/shared/fleet/protocol";
import { parseVersion, VERSION } from "@svc/shared/version";
import { bearerToken, type SecretSet } from "@svc/shared/http/secrets";
import { upgradeWebSocket } from "@svc/shared/http/upgrade";
import { hostAllowed, type Network } from "./networks.ts";
import {
  modelsFromRegistration,
  type WorkerDirectory,
  type WorkerModel,
  type WorkerRecord,
} from "../directory/types.ts";
import type { Logger } from "@svc/shared/log";
import type { RouterMetrics } from "../metrics/router_metrics.ts";

/** A socket must register within this time. */
export const REGISTRATION_TIMEOUT_MS = 5000;

/** Settings of the hub. */
export interface FleetHubOptions {
  directory: WorkerDirectory;
  /** Accepted worker tokens (empty: every worker is refused). */
  workerTokens: SecretSet;
  routerId: string;
  heartbeatIntervalMs: number;
  statusIntervalMs: number;
  workerStaleMs: number;
  /** Most models one worker may announce; further ones are ignored. */
  maxModelsPerWorker: number;
  /** Most frames one socket may send per second; beyond it the socket is closed. */
  maxFramesPerS: number;
  /** Non-empty: advertised URLs must be IP literals inside one of these networks. */
  allowedNetworks: readonly Network[];
  log: Logger;
  metrics: RouterMetrics;
  now?: () => number;
}

/**
 * What the hub needs of a worker's socket: Deno's WebSocket (under Deno.serve) and a `ws` socket
 * (under the node:http server) both have it.
 */
interface FleetSocket {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number }) => void) | null;
  onerror: (() => void) | null;
}

/** `readyState` of an open socket (the same in every WebSocket implementation). */
const OPEN = 1;

/** Seconds without a pong before the server drops a fleet socket (Deno.serve's default). */
const FLEET_IDLE_TIMEOUT_S = 120;

/** One worker socket held by this router process. */
interface Connection {
  socket: FleetSocket;
  connId: string;
  record: WorkerRecord | undefined;
  lastFrameAt: number;
  /** Frames are handled one after another (directory writes are async). */
  chain: Promise<void>;
  regTimer: ReturnType<typeof setTimeout> | undefined;
  closed: boolean;
  /** Start of the current one-second frame window, and frames received in it. */
  windowStart: number;
  windowFrames: number;
  /** A model-cap warning was logged for this socket. */
  capWarned: boolean;
}

/** Accepts worker sockets and mirrors their state into the directory. */
export class FleetHub {
  readonly #o: FleetHubOptions;
  readonly #now: () => number;
  readonly #conns = new Set<Connection>();
  readonly #byWorker = new Map<string, Connection>();
  readonly #sweep: ReturnType<typeof setInterval>;

  constructor(opts: FleetHubOptions) {
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
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
   * Undefined when no socket here holds the id.
   */
  async drainWorker(id: string): Promise<WorkerRecord | undefined> {
    const conn = this.#byWorker.get(id);
    if (!conn?.record) return undefined;
    if (conn.record.draining) return conn.record;
    const record = { ...conn.record, draining: true };
    conn.record = record;
    await this.#o.directory.put(record);
    this.#o.log("info", "worker draining", { worker_id: id, reason: "operator" });
    return record;
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
      this.#o.metrics.connections.inc(["unauthorized"]);
      this.#o.log("warn", "worker connection refused: missing or invalid worker token", {
        remote,
        credentials: token === undefined ? "missing" : "invalid",
      });
      return errorResponse(new ServiceError("UNAUTHORIZED", "a valid worker token is required"));
    }
    const { socket, response } = upgradeWebSocket(req, { idleTimeoutS: FLEET_IDLE_TIMEOUT_S });
    this.#accept(socket as unknown as FleetSocket);
    return response;
  }

  #accept(socket: FleetSocket): void {
    const conn: Connection = {
      socket,
      connId: crypto.randomUUID(),
      record: undefined,
      lastFrameAt: this.#now(),
      chain: Promise.resolve(),
      regTimer: undefined,
      closed: false,
      windowStart: this.#now(),
      windowFrames: 0,
      capWarned: false,
    };
    this.#conns.add(conn);
    conn.regTimer = setTimeout(() => {
      if (conn.record || conn.closed) return;
      this.#o.metrics.connections.inc(["timeout"]);
      this.#refuse(
        conn,
        "REGISTRATION_TIMEOUT",
        "no register frame in time",
        CLOSE_CODES.registrationTimeout,
      );
    }, REGISTRATION_TIMEOUT_MS);
    socket.onmessage = (ev) => {
      if (conn.closed) return;
      const now = this.#now();
      conn.lastFrameAt = now;
      // Counted before queueing: a flood must not build up a backlog of frames to handle.
      if (now - conn.windowStart >= 1000) {
        conn.windowStart = now;
        conn.windowFrames = 0;
      }
      if (++conn.windowFrames > this.#o.maxFramesPerS) {
        this.#o.metrics.connections.inc(["rate_limited"]);
        this.#o.log("warn", "worker sends too many frames, closing", {
          worker_id: conn.record?.id,
          max_frames_per_s: this.#o.maxFramesPerS,
        });
        this.#refuse(
          conn,
          "RATE_LIMITED",
          `more than ${this.#o.maxFramesPerS} frames per second (SVC_WORKER_MAX_FRAMES_PER_S)`,
          CLOSE_CODES.rateLimited,
        );
        return;
      }
      // One frame per event-loop turn: a burst of frames queued behind a slow one would
      // otherwise run back to back in one microtask checkpoint, starving HTTP requests.
      conn.chain = conn.chain.then(nextTurn).then(() => this.#onFrame(conn, ev.data)).catch(
        (err) => this.#o.log("error", "fleet frame handling failed", { error: String(err) }),
      );
    };
    socket.onclose = (ev) => {
      conn.chain = conn.chain.then(() => this.#drop(conn, `socket closed (${ev.code})`));
    };
    socket.onerror = () => {
      // onclose follows; nothing else to do.
    };
  }

  async #onFrame(conn: Connection, data: unknown): Promise<void> {
    if (conn.closed) return;
    const decoded = decodeWorkerMessage(data);
    if (!decoded.ok) {
      this.#o.metrics.connections.inc(["invalid"]);
      this.#o.log("warn", "invalid fleet frame", {
        worker_id: conn.record?.id,
        error: decoded.error,
      });
      this.#refuse(conn, "INVALID_MESSAGE", decoded.error, CLOSE_CODES.invalidMessage);
      return;
    }
    const msg = decoded.message;
    switch (msg.type) {
      case "register":
        return await this.#register(conn, msg);
      case "ping":
        return this.#send(conn, { type: "pong", t: msg.t });
      case "pong":
        return;
      case "status":
      case "drain": {
        if (!conn.record) {
          this.#refuse(conn, "NOT_REGISTERED", "register first", CLOSE_CODES.invalidMessage);
          return;
        }
        if (msg.type === "status") return await this.#status(conn, conn.record, msg);
        const record = { ...conn.record, draining: true, last_seen: this.#now() };
        conn.record = record;
        await this.#o.directory.put(record);
        this.#o.log("info", "worker draining", { worker_id: record.id, reason: msg.reason });
        return this.#send(conn, { type: "ack", of: "drain" });
      }
    }
  }

  async #register(conn: Connection, msg: RegisterMessage): Promise<void> {
    if (conn.record) {
      this.#refuse(conn, "INVALID_MESSAGE", "already registered", CLOSE_CODES.invalidMessage);
      return;
    }
    if (msg.protocol !== FLEET_PROTOCOL_VERSION) {
      this.#o.metrics.connections.inc(["protocol_mismatch"]);
      this.#o.log("warn", "worker speaks another fleet protocol", {
        worker_id: msg.worker_id,
        protocol: msg.protocol,
      });
      this.#refuse(
        conn,
        "PROTOCOL_MISMATCH",
        `router speaks fleet protocol ${FLEET_PROTOCOL_VERSION}, worker ${msg.protocol}`,
        CLOSE_CODES.protocolMismatch,
      );
      return;
    }
    clearTimeout(conn.regTimer);
    if (!sameMinor(msg.version, VERSION)) {
      this.#o.log("warn", "worker release differs from router release", {
        worker_id: msg.worker_id,
        worker_version: msg.version,
        router_version: VERSION,
      });
    }
    const url = this.#advertisedUrl(msg);
    if (url === undefined) return this.#refuseUrl(conn, msg);
    const now = this.#now();
    const record: WorkerRecord = {
      id: msg.worker_id,
      conn_id: conn.connId,
      router_id: this.#o.routerId,
      url,
      machine_profile: msg.machine_profile,
      pool: msg.pool,
      bundle: msg.bundle,
      version: msg.version,
      gpu_count: msg.gpus.count,
      gpu_types: msg.gpus.types,
      models: this.#capModels(conn, msg.worker_id, modelsFromRegistration(msg.models)),
      queue_depth: 0,
      in_flight: 0,
      memory_used_bytes: 0,
      memory_total_bytes: 0,
      draining: msg.draining,
      instance_hash: msg.instance_key === undefined ? undefined : await sha256Hex(msg.instance_key),
      registered_at: now,
      last_seen: now,
    };
    // The id belongs to its live connection: only the same process (same instance key) may
    // take it over, e.g. after a reconnect before the old socket was noticed dead.
    if (!(await this.#o.directory.claim(record))) {
      this.#o.metrics.connections.inc(["id_in_use"]);
      this.#o.log("warn", "worker id in use by a live connection, refused", {
        worker_id: record.id,
        proof: msg.instance_key === undefined ? "none" : "different instance",
      });
      this.#refuse(
        conn,
        "ID_IN_USE",
        `worker id ${record.id} is held by a live connection of another process`,
        CLOSE_CODES.idInUse,
      );
      return;
    }
    conn.record = record;
    const previous = this.#byWorker.get(record.id);
    if (previous && previous !== conn) {
      this.#refuse(
        previous,
        "REPLACED",
        "a newer connection of this worker registered",
        CLOSE_CODES.replaced,
      );
    }
    this.#byWorker.set(record.id, conn);
    this.#o.metrics.connections.inc(["registered"]);
    this.#o.log("info", "worker registered", {
      worker_id: record.id,
      url: record.url,
      machine_profile: record.machine_profile,
      pool: record.pool,
      bundle: record.bundle,
      version: record.version,
      models: record.models.length,
      draining: record.draining,
    });
    this.#send(conn, {
      type: "registered",
      protocol: FLEET_PROTOCOL_VERSION,
      router_version: VERSION,
      router_id: this.#o.routerId,
      heartbeat_interval_ms: this.#o.heartbeatIntervalMs,
      status_interval_ms: this.#o.statusIntervalMs,
      stale_after_ms: this.#o.workerStaleMs,
    });
  }

  /**
   * The advertised URL as the router will use it (`scheme://host[:port]`, normalised), or
   * undefined when it is outside the allowed networks.
   */
  #advertisedUrl(msg: RegisterMessage): string | undefined {
    const u = new URL(msg.url); // shape checked by the protocol schema
    if (this.#o.allowedNetworks.length > 0 && !hostAllowed(u.hostname, this.#o.allowedNetworks)) {
      return undefined;
    }
    return `${u.protocol}//${u.host}`;
  }

  #refuseUrl(conn: Connection, msg: RegisterMessage): void {
    this.#o.metrics.connections.inc(["invalid"]);
    this.#o.log("warn", "worker advertises a URL outside SVC_WORKER_ALLOWED_NETWORKS", {
      worker_id: msg.worker_id,
      url: msg.url,
    });
    this.#refuse(
      conn,
      "INVALID_MESSAGE",
      "url must be an IP address inside SVC_WORKER_ALLOWED_NETWORKS",
      CLOSE_CODES.invalidMessage,
    );
  }

  /** At most `maxModelsPerWorker` models; the rest is ignored (logged once per socket). */
  #capModels(conn: Connection, workerId: string, models: WorkerModel[]): WorkerModel[] {
    const max = this.#o.maxModelsPerWorker;
    if (models.length <= max) return models;
    if (!conn.capWarned) {
      conn.capWarned = true;
      this.#o.log("warn", "worker announces more models than allowed; the rest is ignored", {
        worker_id: workerId,
        max_models: max,
      });
    }
    return models.slice(0, max);
  }

  async #status(conn: Connection, prev: WorkerRecord, msg: StatusMessage): Promise<void> {
    const record: WorkerRecord = {
      ...prev,
      models: this.#capModels(conn, prev.id, mergeModels(prev.models, msg, prev.bundle)),
      queue_depth: msg.queue_depth,
      in_flight: msg.in_flight,
      memory_used_bytes: msg.memory_used_bytes,
      memory_total_bytes: msg.memory_total_bytes,
      // Draining is one-way: a status frame cannot undo a drain notice.
      draining: prev.draining || msg.draining,
      last_seen: this.#now(),
    };
    if (record.draining && !prev.draining) {
      this.#o.log("info", "worker draining", { worker_id: record.id, reason: "status" });
    }
    conn.record = record;
    await this.#o.directory.put(record);
  }

  #send(conn: Connection, msg: RouterMessage): void {
    if (conn.closed || conn.socket.readyState !== OPEN) return;
    try {
      conn.socket.send(encodeMessage(msg));
    } catch {
      // The socket is going away; onclose does the cleanup.
    }
  }

  #refuse(conn: Connection, code: ErrorMessage["code"], message: string, closeCode: number): void {
    this.#send(conn, { type: "error", code, message });
    this.#closeSocket(conn, closeCode, code);
    conn.chain = conn.chain.then(() => this.#drop(conn, message));
  }

  #closeSocket(conn: Connection, code: number, reason: string): void {
    try {
      conn.socket.close(code, reason);
    } catch {
      // Already closed.
    }
  }

  /** Forget a connection and remove its worker (once; onclose may come later or never). */
  async #drop(conn: Connection, why: string): Promise<void> {
    if (conn.closed) return;
    conn.closed = true;
    clearTimeout(conn.regTimer);
    this.#conns.delete(conn);
    const rec = conn.record;
    if (!rec) return;
    if (this.#byWorker.get(rec.id) === conn) this.#byWorker.delete(rec.id);
    const removed = await this.#o.directory.remove(rec.id, conn.connId);
    this.#o.log("info", "worker removed", { worker_id: rec.id, why, removed });
  }

  /** Close sockets that have been silent longer than the stale bound. */
  #sweepSilent(): void {
    const now = this.#now();
    for (const conn of this.#conns) {
      if (conn.closed || now - conn.lastFrameAt <= this.#o.workerStaleMs) continue;
      this.#o.log("warn", "worker silent, removing", {
        worker_id: conn.record?.id,
        silent_ms: now - conn.lastFrameAt,
      });
      // After a heartbeat timeout onclose may never fire: drop now, then close.
      conn.chain = conn.chain.then(() => this.#drop(conn, "heartbeat timeout"));
      this.#closeSocket(conn, CLOSE_CODES.heartbeatTimeout, "heartbeat timeout");
    }
  }

  /** Close every socket (router shutdown) so workers reconnect elsewhere at once. */
  async close(): Promise<void> {
    clearInterval(this.#sweep);
    const pending: Promise<void>[] = [];
    for (const conn of [...this.#conns]) {
      this.#closeSocket(conn, CLOSE_CODES.goingAway, "router shutting down");
      conn.chain = conn.chain.then(() => this.#drop(conn, "router shutting down"));
      pending.push(conn.chain);
    }
    await Promise.all(pending);
  }
}

/**
 * Apply a status frame's model states to the registered list (unknown names join the bundle):
 * one pass over each list. The caller caps the result, so repeated frames of new names cannot
 * grow a worker's list (and every later merge) without bound.
 */
export function mergeModels(
  prev: readonly WorkerModel[],
  msg: Pick<StatusMessage, "models">,
  bundle: string,
): WorkerModel[] {
  const byName = new Map(msg.models.map((m) => [m.name, m]));
  const out: WorkerModel[] = prev.map((m) => {
    const s = byName.get(m.name);
    if (!s) return m;
    byName.delete(m.name);
    return { ...s, name: m.name, bundle: m.bundle };
  });
  for (const s of byName.values()) out.push({ ...s, bundle });
  return out;
}

/** Resolves on a later turn of the event loop (after pending I/O callbacks). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** SHA-256 of `text`, hex (instance keys are stored only hashed). */
async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** True when two releases share major.minor (anything unparsable counts as different). */
function sameMinor(a: string, b: string): boolean {
  try {
    const [am, an] = parseVersion(a);
    const [bm, bn] = parseVersion(b);
    return am === bm && an === bn;
  } catch {
    return false;
  }
}
