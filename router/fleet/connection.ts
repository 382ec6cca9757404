/**
 * One worker socket held by this router process: its frame rate, its registration, its status
 * frames and drain notices, and how it ends. Frames are handled one after another (directory
 * writes are async); every way of closing the socket is a row of the refusal table.
 */
import {
  decodeWorkerMessage,
  encodeMessage,
  type RouterMessage,
  type StatusMessage,
} from "@svc/shared/fleet/protocol";
import type { WorkerModel, WorkerRecord } from "../directory/types.ts";
import type { FleetHubOptions, FleetSocket } from "./options.ts";
import { type RefusalKind, REFUSALS } from "./refusals.ts";
import { register } from "./registration.ts";

/** A socket must register within this time. */
export const REGISTRATION_TIMEOUT_MS = 5000;

/** `readyState` of an open socket (the same in every WebSocket implementation). */
const OPEN = 1;

/** What a connection shares with its hub. */
export interface HubServices {
  readonly o: FleetHubOptions;
  readonly now: () => number;
  /** Registered connections by worker id. */
  readonly byWorker: Map<string, FleetConnection>;
  /** Forget a connection that has ended. */
  forget(conn: FleetConnection): void;
}

/** One worker socket, from upgrade to close. */
export class FleetConnection {
  readonly socket: FleetSocket;
  readonly connId: string = crypto.randomUUID();
  record: WorkerRecord | undefined;
  lastFrameAt: number;
  /** Frames are handled one after another (directory writes are async). */
  chain: Promise<void> = Promise.resolve();
  closed = false;
  readonly #hub: HubServices;
  #regTimer: ReturnType<typeof setTimeout> | undefined;
  /** Start of the current one-second frame window, and frames received in it. */
  #windowStart: number;
  #windowFrames = 0;
  /** A model-cap warning was logged for this socket. */
  #capWarned = false;

  constructor(socket: FleetSocket, hub: HubServices) {
    this.socket = socket;
    this.#hub = hub;
    this.lastFrameAt = hub.now();
    this.#windowStart = hub.now();
    this.#regTimer = setTimeout(() => {
      if (this.record || this.closed) return;
      this.refuse("registrationTimeout", "no register frame in time");
    }, REGISTRATION_TIMEOUT_MS);
    socket.onmessage = (ev) => this.#received(ev.data);
    socket.onclose = (ev) => {
      this.chain = this.chain.then(() => this.drop(`socket closed (${ev.code})`));
    };
    socket.onerror = () => {
      // onclose follows; nothing else to do.
    };
  }

  #received(data: unknown): void {
    if (this.closed) return;
    const o = this.#hub.o;
    const now = this.#hub.now();
    this.lastFrameAt = now;
    // Counted before queueing: a flood must not build up a backlog of frames to handle.
    if (now - this.#windowStart >= 1000) {
      this.#windowStart = now;
      this.#windowFrames = 0;
    }
    if (++this.#windowFrames > o.maxFramesPerS) {
      o.log("warn", "worker sends too many frames, closing", {
        worker_id: this.record?.id,
        max_frames_per_s: o.maxFramesPerS,
      });
      this.refuse(
        "rateLimited",
        `more than ${o.maxFramesPerS} frames per second (SVC_WORKER_MAX_FRAMES_PER_S)`,
      );
      return;
    }
    // One frame per event-loop turn: a burst of frames queued behind a slow one would
    // otherwise run back to back in one microtask checkpoint, starving HTTP requests.
    this.chain = this.chain.then(nextTurn).then(() => this.#onFrame(data)).catch(
      (err) => o.log("error", "fleet frame handling failed", { error: String(err) }),
    );
  }

  async #onFrame(data: unknown): Promise<void> {
    if (this.closed) return;
    const o = this.#hub.o;
    const decoded = decodeWorkerMessage(data);
    if (!decoded.ok) {
      o.log("warn", "invalid fleet frame", { worker_id: this.record?.id, error: decoded.error });
      this.refuse("invalidFrame", decoded.error);
      return;
    }
    const msg = decoded.message;
    switch (msg.type) {
      case "register":
        return await register(this, msg, this.#hub);
      case "ping":
        return this.send({ type: "pong", t: msg.t });
      case "pong":
        return;
      case "status":
      case "drain": {
        if (!this.record) {
          this.refuse("notRegistered", "register first");
          return;
        }
        if (msg.type === "status") return await this.#status(this.record, msg);
        const record = { ...this.record, draining: true, last_seen: this.#hub.now() };
        this.record = record;
        await o.directory.put(record);
        o.log("info", "worker draining", { worker_id: record.id, reason: msg.reason });
        return this.send({ type: "ack", of: "drain" });
      }
    }
  }

  /** A register frame is being handled: the registration deadline no longer applies. */
  registering(): void {
    clearTimeout(this.#regTimer);
  }

  /** At most `maxModelsPerWorker` models; the rest is ignored (logged once per socket). */
  capModels(workerId: string, models: WorkerModel[]): WorkerModel[] {
    const max = this.#hub.o.maxModelsPerWorker;
    if (models.length <= max) return models;
    if (!this.#capWarned) {
      this.#capWarned = true;
      this.#hub.o.log("warn", "worker announces more models than allowed; the rest is ignored", {
        worker_id: workerId,
        max_models: max,
      });
    }
    return models.slice(0, max);
  }

  async #status(prev: WorkerRecord, msg: StatusMessage): Promise<void> {
    const o = this.#hub.o;
    const record: WorkerRecord = {
      ...prev,
      models: this.capModels(prev.id, mergeModels(prev.models, msg, prev.bundle)),
      queue_depth: msg.queue_depth,
      in_flight: msg.in_flight,
      memory_used_bytes: msg.memory_used_bytes,
      memory_total_bytes: msg.memory_total_bytes,
      // Draining is one-way: a status frame cannot undo a drain notice.
      draining: prev.draining || msg.draining,
      last_seen: this.#hub.now(),
    };
    if (record.draining && !prev.draining) {
      o.log("info", "worker draining", { worker_id: record.id, reason: "status" });
    }
    this.record = record;
    await o.directory.put(record);
  }

  /** Mark the worker draining on an operator's request (status frames cannot undo it). */
  async drain(): Promise<WorkerRecord | undefined> {
    if (!this.record) return undefined;
    if (this.record.draining) return this.record;
    const record = { ...this.record, draining: true };
    this.record = record;
    await this.#hub.o.directory.put(record);
    this.#hub.o.log("info", "worker draining", { worker_id: record.id, reason: "operator" });
    return record;
  }

  /** Send a frame if the socket is open. */
  send(msg: RouterMessage): void {
    if (this.closed || this.socket.readyState !== OPEN) return;
    try {
      this.socket.send(encodeMessage(msg));
    } catch {
      // The socket is going away; onclose does the cleanup.
    }
  }

  /** Tell the worker why (error frame), close the socket, and forget it. */
  refuse(kind: RefusalKind, message: string): void {
    const r = REFUSALS[kind];
    if ("metric" in r) this.#hub.o.metrics.connections.inc([r.metric]);
    this.send({ type: "error", code: r.code, message });
    this.closeSocket(r.close, r.code);
    this.chain = this.chain.then(() => this.drop(message));
  }

  /** Close the socket (cleanup comes from onclose or an explicit drop). */
  closeSocket(code: number, reason: string): void {
    try {
      this.socket.close(code, reason);
    } catch {
      // Already closed.
    }
  }

  /** Forget this connection and remove its worker (once; onclose may come later or never). */
  async drop(why: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.#regTimer);
    this.#hub.forget(this);
    const rec = this.record;
    if (!rec) return;
    if (this.#hub.byWorker.get(rec.id) === this) this.#hub.byWorker.delete(rec.id);
    const removed = await this.#hub.o.directory.remove(rec.id, this.connId);
    this.#hub.o.log("info", "worker removed", { worker_id: rec.id, why, removed });
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
    return { name: m.name, bundle: m.bundle, state: s.state, queue_depth: s.queue_depth };
  });
  for (const s of byName.values()) {
    out.push({ name: s.name, bundle, state: s.state, queue_depth: s.queue_depth });
  }
  return out;
}

/** Resolves on a later turn of the event loop (after pending I/O callbacks). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
