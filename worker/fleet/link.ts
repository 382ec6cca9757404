/**
 * The worker's end of the fleet link: dial the router, register, send status and heartbeats,
 * and dial again whenever the link is lost (router restart, network cut, frozen router).
 * One loop, one socket at a time; every wait is bounded.
 */
import {
  decodeRouterMessage,
  encodeMessage,
  FLEET_PROTOCOL_VERSION,
  type FleetModel,
  MODEL_STATES,
  type ModelState,
  type RegisteredMessage,
  SLUG_RE,
  type WorkerMessage,
} from "@svc/shared/fleet/protocol";
import { VERSION } from "@svc/shared/version";
import { backoffDelay } from "./backoff.ts";
import type { FleetConfig } from "./config.ts";

/** Live state of the worker, sampled for every status frame. */
export interface WorkerStatusSnapshot {
  models: { name: string; state: ModelState; queue_depth: number }[];
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

/** Logging function of the worker. */
export type FleetLog = (
  level: "info" | "warn" | "error",
  msg: string,
  fields?: Record<string, unknown>,
) => void;

/** What the link needs from the rest of the worker. */
export interface FleetLinkDeps {
  servedModels: () => { name: string; bundle: string; state: string }[];
  status: () => WorkerStatusSnapshot;
  log: FleetLog;
  /** Machine profile and GPUs of this machine (run once, before the first dial). */
  detect: () => Promise<{ profile: string; gpuCount: number; gpuTypes: string[] }>;
  random?: () => number;
}

/** Bound on the TCP + TLS + HTTP upgrade of one dial. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** Bound on waiting for `registered` after sending `register`. */
export const REGISTER_TIMEOUT_MS = 5_000;
/** Bound on waiting for the router's ack of a drain notice. */
export const DRAIN_ACK_TIMEOUT_MS = 2_000;
/** Bound on waiting for the socket to close in close(). */
export const CLOSE_TIMEOUT_MS = 1_000;
/** Timings used until the router states its own (in `registered`). */
const DEFAULT_TIMINGS = { heartbeat: 500, status: 1000, stale: 3000 };

/** How one socket session ended. */
interface SessionEnd {
  registered: boolean;
  /** Reconnect without backoff (the router went silent or closed a healthy session). */
  immediate: boolean;
  /** Back off to the cap (the router refused us; retrying fast will not help). */
  refused: boolean;
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
  #ws: WebSocket | null = null;
  #registered = false;
  #draining = false;
  #closed = false;
  #seq = 0;
  #profile: { profile: string; gpuCount: number; gpuTypes: string[] } | undefined;
  #drainAck: (() => void) | null = null;
  #wake: (() => void) | null = null;
  /** Ends the current session from outside (close()). */
  #endSession: ((code: number, reason: string) => void) | null = null;
  #loop: Promise<void>;
  #failuresInARow = 0;

  constructor(cfg: FleetConfig, deps: FleetLinkDeps) {
    this.#cfg = cfg;
    this.#deps = deps;
    this.#random = deps.random ?? Math.random;
    this.#loop = this.#run();
  }

  /** True while registered over an open socket. */
  get connected(): boolean {
    return this.#registered && this.#ws?.readyState === WebSocket.OPEN;
  }

  async #run(): Promise<void> {
    this.#profile = await this.#deps.detect();
    let attempt = 0;
    while (!this.#closed) {
      const end = await this.#session();
      if (this.#closed) break;
      if (end.registered) attempt = 0;
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

  #register(profile: { profile: string; gpuCount: number; gpuTypes: string[] }): WorkerMessage {
    const models: FleetModel[] = this.#deps.servedModels().slice(0, 1000).map((m) => ({
      name: m.name,
      bundle: SLUG_RE.test(m.bundle) ? m.bundle : this.#cfg.bundle,
      state: toState(m.state),
    }));
    return {
      type: "register",
      protocol: FLEET_PROTOCOL_VERSION,
      worker_id: this.#cfg.workerId,
      url: this.#cfg.advertiseUrl,
      machine_profile: profile.profile,
      pool: this.#cfg.pool ?? profile.profile,
      bundle: this.#cfg.bundle,
      version: VERSION,
      gpus: { count: profile.gpuCount, types: profile.gpuTypes.filter((t) => SLUG_RE.test(t)) },
      models,
      draining: this.#draining,
    };
  }

  #status(): WorkerMessage | undefined {
    let s: WorkerStatusSnapshot;
    try {
      s = this.#deps.status();
    } catch (err) {
      this.#deps.log("warn", "fleet status snapshot failed", { error: String(err) });
      return undefined;
    }
    return {
      type: "status",
      seq: this.#seq++,
      models: s.models.slice(0, 1000).map((m) => ({
        name: m.name,
        state: toState(m.state),
        queue_depth: count(m.queue_depth),
      })),
      queue_depth: count(s.queue_depth),
      in_flight: count(s.in_flight),
      memory_used_bytes: count(s.memory_used_bytes),
      memory_total_bytes: count(s.memory_total_bytes),
      draining: s.draining || this.#draining,
    };
  }

  #send(ws: WebSocket, msg: WorkerMessage | undefined): void {
    if (!msg || ws.readyState !== WebSocket.OPEN) return;
    try {
      ws.send(encodeMessage(msg));
    } catch {
      // The socket is closing; the session's close handler takes over.
    }
  }

  /** One dial and, if it succeeds, one registered session; resolves when it ends. */
  #session(): Promise<SessionEnd> {
    const profile = this.#profile!;
    return new Promise<SessionEnd>((resolve) => {
      // Timers leave the set when they fire: status and heartbeat ticks re-arm forever.
      const timers = new Set<ReturnType<typeof setTimeout>>();
      const later = (fn: () => void, ms: number) => {
        const t = setTimeout(() => {
          timers.delete(t);
          fn();
        }, ms);
        timers.add(t);
      };
      let timings = DEFAULT_TIMINGS;
      let lastFrame = Date.now();
      let finished = false;
      let ws: WebSocket;
      const finish = (end: SessionEnd, closeCode?: number, reason?: string) => {
        if (finished) return;
        finished = true;
        for (const t of timers) clearTimeout(t);
        const wasRegistered = this.#registered;
        this.#registered = false;
        this.#ws = null;
        this.#endSession = null;
        this.#drainAck?.();
        // Detach: after a heartbeat timeout the old socket's onclose may never fire, and a late
        // one must not end the next session.
        ws.onopen =
          ws.onmessage =
          ws.onerror =
          ws.onclose =
            null;
        if (closeCode !== undefined && ws.readyState < WebSocket.CLOSING) {
          try {
            ws.close(closeCode, reason);
          } catch {
            // already closing
          }
        }
        if (wasRegistered && !this.#closed) {
          this.#deps.log("warn", "fleet link lost; reconnecting", {
            router: this.#cfg.routerWsUrl,
          });
        }
        resolve({ ...end, registered: end.registered || wasRegistered });
      };
      try {
        ws = new WebSocket(this.#cfg.routerWsUrl, {
          headers: { authorization: `Bearer ${this.#cfg.token}` },
        });
      } catch (err) {
        this.#deps.log("error", "cannot dial the router", { error: (err as Error).message });
        resolve({ registered: false, immediate: false, refused: true });
        return;
      }
      this.#ws = ws;
      this.#endSession = (code, reason) =>
        finish({ registered: false, immediate: false, refused: false }, code, reason);
      let refused = false;
      later(() => {
        if (ws.readyState === WebSocket.CONNECTING) {
          this.#noteFailure("router connection timed out");
          finish({ registered: false, immediate: false, refused: false }, 1000);
        }
      }, CONNECT_TIMEOUT_MS);
      ws.onopen = () => {
        lastFrame = Date.now();
        this.#send(ws, this.#register(profile));
        later(() => {
          if (!this.#registered) {
            this.#noteFailure("router did not acknowledge the registration");
            finish({ registered: false, immediate: false, refused: false }, 1000);
          }
        }, REGISTER_TIMEOUT_MS);
      };
      ws.onmessage = (ev) => {
        lastFrame = Date.now();
        const decoded = decodeRouterMessage(ev.data);
        if (!decoded.ok) {
          this.#deps.log("warn", "invalid frame from router", { error: decoded.error });
          return;
        }
        const msg = decoded.message;
        switch (msg.type) {
          case "registered":
            timings = {
              heartbeat: msg.heartbeat_interval_ms,
              status: msg.status_interval_ms,
              stale: msg.stale_after_ms,
            };
            this.#onRegistered(ws, msg, later, () => lastFrame, timings, finish);
            return;
          case "ping":
            this.#send(ws, { type: "pong", t: msg.t });
            return;
          case "pong":
            return;
          case "ack":
            this.#drainAck?.();
            return;
          case "error":
            refused = msg.code === "PROTOCOL_MISMATCH";
            this.#deps.log(refused ? "error" : "warn", "router refused the worker", {
              code: msg.code,
              message: msg.message,
            });
            return;
        }
      };
      ws.onerror = (ev) => {
        const message = (ev as ErrorEvent).message ?? "";
        if (/\b401\b/.test(message)) {
          refused = true;
          this.#noteFailure("router refused the worker token (HTTP 401): check SVC_WORKER_TOKEN");
        } else if (!this.#registered) {
          this.#noteFailure(`cannot reach the router: ${message || "connection failed"}`);
        }
      };
      ws.onclose = (ev) => {
        // 1001: the router is shutting down (restart): dial again at once, it may be back soon.
        const immediate = this.#registered && ev.code === 1001;
        finish({ registered: false, immediate, refused });
      };
    });
  }

  #onRegistered(
    ws: WebSocket,
    msg: RegisteredMessage,
    later: (fn: () => void, ms: number) => void,
    lastFrame: () => number,
    timings: { heartbeat: number; status: number; stale: number },
    finish: (end: SessionEnd, closeCode?: number, reason?: string) => void,
  ): void {
    if (this.#registered) return;
    this.#registered = true;
    this.#failuresInARow = 0;
    this.#deps.log("info", "registered with the router", {
      router: this.#cfg.routerWsUrl,
      router_id: msg.router_id,
      router_version: msg.router_version,
      worker_id: this.#cfg.workerId,
      pool: this.#cfg.pool ?? this.#profile?.profile,
      bundle: this.#cfg.bundle,
    });
    // Status at once (the router learns the load before routing), then on the router's beat.
    this.#send(ws, this.#status());
    const statusTick = () => {
      this.#send(ws, this.#status());
      later(statusTick, timings.status);
    };
    later(statusTick, timings.status);
    const heartbeat = () => {
      // A frozen router never closes its socket: silence past the bound means it is gone.
      if (Date.now() - lastFrame() > timings.stale) {
        this.#deps.log("warn", "router silent past the heartbeat bound", {
          silent_ms: Date.now() - lastFrame(),
        });
        finish({ registered: true, immediate: true, refused: false }, 4410, "heartbeat timeout");
        return;
      }
      this.#send(ws, { type: "ping", t: Date.now() });
      later(heartbeat, timings.heartbeat);
    };
    later(heartbeat, timings.heartbeat);
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
    const ws = this.#ws;
    if (!ws || !this.connected) return;
    const acked = new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        this.#drainAck = null;
        resolve();
      }, DRAIN_ACK_TIMEOUT_MS);
      this.#drainAck = () => {
        clearTimeout(t);
        this.#drainAck = null;
        resolve();
      };
    });
    this.#send(ws, { type: "drain", reason: "shutdown" });
    this.#send(ws, this.#status());
    await acked;
    this.#deps.log("info", "router acknowledged drain", { worker_id: this.#cfg.workerId });
  }

  /** Stop reconnecting and close the socket (bounded). */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#wake?.();
      const ws = this.#ws;
      const closedEvent = ws && ws.readyState < WebSocket.CLOSING
        ? new Promise<void>((resolve) => ws.addEventListener("close", () => resolve()))
        : undefined;
      this.#endSession?.(1000, "worker shutting down");
      // Let the close handshake finish so the router removes us at once, but never wait long.
      if (closedEvent) await withTimeout(closedEvent, CLOSE_TIMEOUT_MS);
    }
    await withTimeout(this.#loop, CLOSE_TIMEOUT_MS);
  }
}

/** Wait for `p`, at most `ms` (the timer is cleared either way). */
async function withTimeout(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([p, new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
