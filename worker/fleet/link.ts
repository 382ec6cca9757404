/**
 * The worker's end of the fleet link: dial the router, register, send status and heartbeats,
 * and dial again whenever the link is lost (router restart, network cut, frozen router).
 * One loop, one socket session (`session.ts`) at a time; every wait is bounded.
 */
import {
  CLOSE_CODES,
  FLEET_PROTOCOL_VERSION,
  type FleetModel,
  type FleetModelStatus,
  MODEL_REVISION_RE,
  MODEL_STATES,
  type ModelState,
  type RegisteredMessage,
  SLUG_RE,
  type WorkerMessage,
} from "@svc/shared/fleet/protocol";
import { deadline } from "@svc/shared/deadline";
import type { Logger } from "@svc/shared/log";
import { VERSION } from "@svc/shared/version";
import { WorkerKeys } from "@svc/shared/fleet/worker_keys";
import { StatusDeltas } from "@svc/shared/fleet/status_delta";
import { backoffDelay } from "./backoff.ts";
import type { FleetConfig } from "./config.ts";
import { LinkSession, type SessionHost } from "./session.ts";
import { acceptStreams, type ServeRequest, WORKER_STREAM_OFFER } from "./streams/accept.ts";

/** Live state of the worker, sampled for every status frame (models as the wire reports them). */
export interface WorkerStatusSnapshot {
  models: FleetModelStatus[];
  queue_depth: number;
  in_flight: number;
  memory_used_bytes: number;
  memory_total_bytes: number;
  draining: boolean;
}

/** The link as the worker's main module uses it. */
export interface FleetLink {
  /** Tell the router to send nothing new (start of graceful shutdown); bounded wait for its ack. */
  drain(): Promise<void>;
  /** Close the link for good (process exit); bounded. */
  close(): Promise<void>;
  /** True while registered with the router over an open socket. */
  readonly connected: boolean;
}

/** Machine profile and GPUs of this machine, as registered. */
export interface MachineFacts {
  machineProfile: string;
  gpuCount: number;
  gpuTypes: string[];
}

/** What the link needs from the rest of the worker. */
export interface FleetLinkDeps {
  servedModels: () => { name: string; bundle: string; state: string; revision?: string }[];
  status: () => WorkerStatusSnapshot;
  log: Logger;
  /** Machine profile and GPUs of this machine (run once, before the first dial). */
  detect: () => Promise<MachineFacts>;
  random?: () => number;
  /**
   * The worker's one way in for a request (worker/server/serve_request.ts): with it and the
   * connection transport, requests come over the link (worker/fleet/streams/accept.ts).
   */
  serve?: ServeRequest;
  /**
   * The process's instance key (default: a fresh one): links of one worker to several router
   * instances share it, so each instance and the shared directory see the same process.
   */
  instanceKey?: string;
}

/** A fresh instance key: random per process, sent at every registration and never shown. */
export function newInstanceKey(): string {
  return crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "");
}

/** Bound on waiting for the router's ack of a drain notice. */
export const DRAIN_ACK_TIMEOUT_MS = 2_000;
/** Bound on waiting for the socket to close in close(). */
export const CLOSE_TIMEOUT_MS = 1_000;

/** A revision for the wire: left out when absent or not one the router would accept. */
function revisionField(revision: string | undefined): { revision?: string } {
  return revision !== undefined && MODEL_REVISION_RE.test(revision) ? { revision } : {};
}

/** Normalise a reported model state (unknown strings count as available). */
function toState(s: string): ModelState {
  return (MODEL_STATES as readonly string[]).includes(s) ? s as ModelState : "available";
}

/** Non-negative integer for the wire (status sources may hand floats or garbage). */
function count(n: number): number {
  return Number.isFinite(n) && n > 0 ? Math.round(n) : 0;
}

/** The dial-back link implementation. */
export class FleetLinkImpl implements FleetLink {
  readonly #cfg: FleetConfig;
  readonly #deps: FleetLinkDeps;
  readonly #random: () => number;
  readonly #host: SessionHost;
  /**
   * Random per process, sent at every registration and never shown: it proves to the router
   * that a reconnect is this worker again, so no other holder of the token can take the id.
   */
  readonly #instanceKey: string;
  #session: LinkSession | undefined;
  #draining = false;
  #closed = false;
  #seq = 0;
  /** Status frames list only the models that changed (and all of them now and then). */
  readonly #deltas = new StatusDeltas();
  #machine: MachineFacts | undefined;
  /** Proof of the worker id under the fleet's worker secret (none without the secret). */
  #idProof: string | undefined;
  /** Settles a pending drain(): true on the router's ack, false when the socket ended. */
  #drainAnswer: ((acked: boolean) => void) | null = null;
  #wake: (() => void) | null = null;
  #loop: Promise<void>;
  #failuresInARow = 0;

  constructor(cfg: FleetConfig, deps: FleetLinkDeps) {
    this.#cfg = cfg;
    this.#deps = deps;
    this.#random = deps.random ?? Math.random;
    this.#instanceKey = deps.instanceKey ?? newInstanceKey();
    this.#host = {
      routerWsUrl: cfg.routerWsUrl,
      token: cfg.token,
      registerFrame: () => this.#registerFrame(),
      statusFrame: () => this.#statusFrame(),
      onRegistered: (msg) => this.#onRegistered(msg),
      onDrainAck: () => this.#drainAnswer?.(true),
      ...(deps.serve && cfg.transport === "connection"
        ? {
          acceptStreams: (socket, grant, onViolation) =>
            acceptStreams(socket, grant, deps.serve!, deps.log, onViolation),
        }
        : {}),
      noteFailure: (message) => this.#noteFailure(message),
      log: deps.log,
    };
    this.#loop = this.#run();
  }

  /** True while registered over an open socket. */
  get connected(): boolean {
    return this.#session?.connected ?? false;
  }

  async #run(): Promise<void> {
    this.#machine = await this.#deps.detect();
    const secret = this.#cfg.secret;
    if (secret !== undefined) {
      this.#idProof = await new WorkerKeys(secret).idProof(this.#cfg.workerId);
    }
    let attempt = 0;
    while (!this.#closed) {
      this.#session = new LinkSession(this.#host);
      const end = await this.#session.ended;
      // A drain notice can no longer be acknowledged on this socket: stop waiting for it.
      this.#drainAnswer?.(false);
      if (this.#closed) break;
      if (end.registered) {
        attempt = 0;
        this.#deps.log("warn", "fleet link lost; reconnecting", { router: this.#cfg.routerWsUrl });
      }
      const delay = end.immediate
        ? Math.round(this.#random() * 100)
        : end.refused
        ? backoffDelay(30, this.#cfg.reconnectMaxMs, this.#random)
        : backoffDelay(attempt++, this.#cfg.reconnectMaxMs, this.#random);
      await this.#sleep(delay);
    }
  }

  /** Sleep that close() can cut short. */
  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.#wake = done;
    }).finally(() => {
      this.#wake = null;
    });
  }

  #registerFrame(): WorkerMessage {
    const machine = this.#machine!;
    const models: FleetModel[] = this.#deps.servedModels().slice(0, 1000).map((m) => ({
      name: m.name,
      bundle: SLUG_RE.test(m.bundle) ? m.bundle : this.#cfg.bundle,
      state: toState(m.state),
      ...revisionField(m.revision),
    }));
    return {
      type: "register",
      protocol: FLEET_PROTOCOL_VERSION,
      worker_id: this.#cfg.workerId,
      ...(this.#cfg.advertiseUrl === undefined ? {} : { url: this.#cfg.advertiseUrl }),
      ...(this.#host.acceptStreams
        ? { transport: "connection" as const, streams: WORKER_STREAM_OFFER }
        : { transport: "http" as const }),
      machine_profile: machine.machineProfile,
      pool: this.#cfg.pool ?? machine.machineProfile,
      bundle: this.#cfg.bundle,
      version: VERSION,
      gpus: { count: machine.gpuCount, types: machine.gpuTypes.filter((t) => SLUG_RE.test(t)) },
      models,
      draining: this.#draining,
      instance_key: this.#instanceKey,
      ...(this.#idProof === undefined ? {} : { id_proof: this.#idProof }),
    };
  }

  /** The next status frame: the models whose status changed since the previous one. */
  #statusFrame(): WorkerMessage | undefined {
    let s: WorkerStatusSnapshot;
    try {
      s = this.#deps.status();
    } catch (err) {
      this.#deps.log("warn", "fleet status snapshot failed", { error: String(err) });
      return undefined;
    }
    return this.#deltas.next({
      type: "status",
      seq: this.#seq++,
      models: s.models.slice(0, 1000).map((m) => ({
        name: m.name,
        state: toState(m.state),
        queue_depth: count(m.queue_depth),
        // A device name the router would refuse (not a slug) is sent as unknown.
        ...(m.device === undefined
          ? {}
          : { device: m.device !== null && SLUG_RE.test(m.device) ? m.device : null }),
        ...(m.memory_bytes === undefined ? {} : { memory_bytes: count(m.memory_bytes) }),
        ...(m.tokens_total === undefined ? {} : { tokens_total: count(m.tokens_total) }),
        ...(m.batch_sizes === undefined ? {} : {
          batch_sizes: {
            counts: m.batch_sizes.counts.map(count),
            sum: count(m.batch_sizes.sum),
            count: count(m.batch_sizes.count),
          },
        }),
        ...revisionField(m.revision),
      })),
      queue_depth: count(s.queue_depth),
      in_flight: count(s.in_flight),
      memory_used_bytes: count(s.memory_used_bytes),
      memory_total_bytes: count(s.memory_total_bytes),
      draining: s.draining || this.#draining,
    });
  }

  #onRegistered(msg: RegisteredMessage): void {
    this.#failuresInARow = 0;
    // A new socket: the router starts from the register frame, so the next status lists all.
    this.#deltas.reset();
    if (msg.worker_id !== undefined && msg.worker_id !== this.#cfg.workerId) {
      this.#deps.log("warn", "the router registered this worker under an id of its own", {
        worker_id: msg.worker_id,
        asked_for: this.#cfg.workerId,
        hint: "the router has SVC_WORKER_API_KEY: set the same key on this worker",
      });
    }
    this.#deps.log("info", "registered with the router", {
      router: this.#cfg.routerWsUrl,
      router_id: msg.router_id,
      router_version: msg.router_version,
      worker_id: this.#cfg.workerId,
      pool: this.#cfg.pool ?? this.#machine?.machineProfile,
      bundle: this.#cfg.bundle,
    });
  }

  /** Log connection failures without flooding: the first of a run, then every tenth. */
  #noteFailure(message: string): void {
    const n = this.#failuresInARow++;
    if (n === 0 || n % 10 === 0) {
      this.#deps.log("warn", message, { router: this.#cfg.routerWsUrl, attempts: n + 1 });
    }
  }

  /** Announce draining; resolves on the router's ack, at once when not connected, or on timeout. */
  async drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    const session = this.#session;
    if (!session?.connected) return;
    const ack = new Promise<boolean>((resolve) => this.#drainAnswer = resolve);
    session.send({ type: "drain", reason: "shutdown" });
    session.send(this.#statusFrame());
    const acked = await deadline(ack, DRAIN_ACK_TIMEOUT_MS, () => false);
    this.#drainAnswer = null;
    if (acked) {
      this.#deps.log("info", "router acknowledged drain", { worker_id: this.#cfg.workerId });
    } else {
      this.#deps.log("warn", "drain notice not acknowledged (link lost or router too slow)", {
        worker_id: this.#cfg.workerId,
      });
    }
  }

  /** Stop reconnecting and close the socket (bounded). */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#wake?.();
      // Let the close handshake finish so the router removes us at once, but never wait long.
      const closed = this.#session?.end(CLOSE_CODES.normal, "worker shutting down");
      if (closed) await deadline(closed, CLOSE_TIMEOUT_MS);
    }
    await deadline(this.#loop, CLOSE_TIMEOUT_MS);
  }
}
