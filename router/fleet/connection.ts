/**
 * One worker socket held by this router process: its frame rate, its registration, its status
 * frames and drain notices, and how it ends. Frames are handled one after another (directory
 * writes are async); every way of closing the socket is a row of the refusal table.
 */
import {
  CLOSE_CODES,
  decodeWorkerMessage,
  encodeMessage,
  type RouterMessage,
  type StatusMessage,
} from "@svc/shared/fleet/protocol";
import type { WorkerModel, WorkerRecord } from "../directory/types.ts";
import type { FleetHubOptions, FleetSocket } from "./options.ts";
import { type RefusalKind, REFUSALS } from "./refusals.ts";
import type { FleetBudget, Talker } from "./budget.ts";
import { byteLength, mergeModels, nextTurn, pingTime, withoutSeq } from "./frames.ts";
import { register } from "./registration.ts";
import type { StreamMux } from "@svc/shared/fleet/streams/mux";
import { type CapRefusalLog, RAISE_HINT } from "./cap_log.ts";

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
  /** What all fleet sockets together may cost (connections, models, bytes per second). */
  readonly budget: FleetBudget;
  /** Drop a refused socket whose peer has not finished the close handshake soon after. */
  terminateLater(socket: FleetSocket): void;
  /** Warnings about refusals at the fleet's caps (rate-limited). */
  readonly capRefusals: CapRefusalLog;
}

/** One worker socket, from upgrade to close. */
export class FleetConnection implements Talker {
  readonly socket: FleetSocket;
  readonly connId: string = crypto.randomUUID();
  record: WorkerRecord | undefined;
  lastFrameAt: number;
  /** Sweeps in a row that found the socket silent (a stalled router's first look does not count). */
  silentSweeps = 0;
  /** Frames are handled one after another (directory writes are async). */
  chain: Promise<void> = Promise.resolve();
  closed = false;
  /** The socket is being closed: frames that still arrive are ignored. */
  refused = false;
  windowBytes = 0;
  announced = 0;
  /** The request streams, once registered with the connection transport. */
  streams: StreamMux | undefined;
  readonly #hub: HubServices;
  #queued = 0;
  #regTimer: ReturnType<typeof setTimeout> | undefined;
  /** Start of the current one-second frame window, and frames received in it. */
  #windowStart: number;
  #windowFrames = 0;
  /** Frames queued or being handled (the steady-state shortcut waits for them). */
  #pending = 0;
  /** The last status frame handled, without its `seq` (router/fleet/frames.ts `withoutSeq`). */
  #lastStatus: string | undefined;
  /** When the router last sent this socket a frame (heartbeats are answered after a pause). */
  #lastSentAt = -Infinity;
  /** A model-cap warning was logged for this socket. */
  #capWarned = false;

  constructor(socket: FleetSocket, hub: HubServices) {
    this.socket = socket;
    this.#hub = hub;
    this.lastFrameAt = hub.now();
    this.#windowStart = hub.now();
    hub.budget.join(this);
    this.#regTimer = setTimeout(() => {
      if (this.record || this.closed) return;
      this.refuse("registrationTimeout", "no register frame in time");
    }, REGISTRATION_TIMEOUT_MS);
    socket.onmessage = (ev) => this.#received(ev.data);
    socket.onclose = (ev) => {
      // Requests in flight fail at once (502), not after the frames queued before the close.
      this.streams?.close();
      this.#chainDrop(`socket closed (${ev.code})`);
    };
    socket.onerror = () => {
      // onclose follows; nothing else to do.
    };
  }

  #received(data: unknown): void {
    if (this.closed || this.refused) return;
    const o = this.#hub.o;
    const now = this.#hub.now();
    this.lastFrameAt = now;
    // Request streams (binary) have their own caps (credit, frame size): not the frame budget's.
    if (this.streams && typeof data !== "string") return this.streams.receive(data);
    const budget = this.#hub.budget;
    const bytes = typeof data === "string" ? data.length : byteLength(data);
    this.#closeBiggest(budget.frame(this, bytes), "SVC_FLEET_MAX_STATUS_BYTES_PER_S", "sent");
    if (this.refused) return;
    if (!this.record && budget.bytesFull) return this.#refuseOverBytes();
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
    // At most a second's worth of frames waits: a socket the router cannot keep up with goes.
    if (this.#queued >= o.maxFramesPerS) {
      this.refuse("rateLimited", "frames arrive faster than the router handles them");
      return;
    }
    // The steady state (a ping, a status frame that repeats the last one) is answered here,
    // when no earlier frame is still waiting: it costs a comparison, not a decode. Control
    // frames are text; anything else goes on to the queue as before.
    if (this.#pending === 0 && typeof data === "string" && this.#steady(data, now)) return;
    this.#queued++;
    // One frame per event-loop turn: a burst of frames queued behind a slow one would
    // otherwise run back to back in one microtask checkpoint, starving HTTP requests.
    this.#enqueue(() =>
      nextTurn().then(() => {
        this.#queued--;
        return this.#onFrame(data);
      })
    );
  }

  /** An unregistered socket in a second whose frames went over the byte cap: refused. */
  #refuseOverBytes(): void {
    const cap = this.#hub.budget.caps.maxBytesPerS;
    this.#hub.capRefusals.refused("SVC_FLEET_MAX_STATUS_BYTES_PER_S", {
      cap: "SVC_FLEET_MAX_STATUS_BYTES_PER_S",
      SVC_FLEET_MAX_STATUS_BYTES_PER_S: cap,
    });
    this.refuse(
      "fleetFull",
      `the fleet is over SVC_FLEET_MAX_STATUS_BYTES_PER_S (${cap}) this second: ${RAISE_HINT}`,
    );
  }

  /** Run `step` after every frame before it; `#pending` counts what has not finished. */
  #enqueue(step: () => Promise<void>): void {
    this.#pending++;
    this.chain = this.chain.then(step).catch((err) => {
      this.#hub.o.log("error", "fleet frame handling failed", { error: String(err) });
      // A registration that failed here (storage busy: a shared KV file is locked by another
      // router) would leave the worker waiting for an answer: it dials again at once instead.
      if (!this.record && !this.refused) {
        this.closeSocket(CLOSE_CODES.goingAway, "registration failed here; dial again");
      }
    }).finally(() => this.#pending--);
  }

  /**
   * Handle `data` if it is a heartbeat or a status frame that says what the last one said
   * (only its `seq` differs): the worker is alive, nothing else moves. False: decode it in full.
   */
  #steady(data: string, now: number): boolean {
    const t = pingTime(data);
    if (t !== undefined) {
      this.#ping(t, now);
      return true;
    }
    const prev = this.record;
    if (!prev || this.#lastStatus === undefined || withoutSeq(data) !== this.#lastStatus) {
      return false;
    }
    const record = { ...prev, last_seen: now };
    this.record = record;
    this.#enqueue(() => this.#hub.o.directory.touch(record));
    return true;
  }

  async #onFrame(data: unknown): Promise<void> {
    // Frames queued before a refusal are dropped unread: that is what the refusal saves.
    if (this.closed || this.refused) return;
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
        return this.#ping(msg.t, this.#hub.now());
      case "pong":
        return;
      case "status":
      case "drain": {
        if (!this.record) {
          this.refuse("notRegistered", "register first");
          return;
        }
        if (msg.type === "status") return await this.#status(this.record, msg, data as string);
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
  capModels(workerId: string, models: readonly WorkerModel[]): WorkerModel[] {
    const max = this.#hub.o.maxModelsPerWorker;
    if (models.length <= max) return models as WorkerModel[];
    if (!this.#capWarned) {
      this.#capWarned = true;
      this.#hub.o.log("warn", "worker announces more models than allowed; the rest is ignored", {
        worker_id: workerId,
        max_models: max,
      });
    }
    return models.slice(0, max);
  }

  async #status(prev: WorkerRecord, msg: StatusMessage, data: string): Promise<void> {
    const o = this.#hub.o;
    const now = this.#hub.now();
    const models = mergeModels(prev.models, msg, prev.bundle);
    // Draining is one-way: a status frame cannot undo a drain notice.
    const draining = prev.draining || msg.draining;
    this.#lastStatus = withoutSeq(data);
    if (
      models === prev.models && draining === prev.draining &&
      msg.queue_depth === prev.queue_depth && msg.in_flight === prev.in_flight &&
      msg.memory_used_bytes === prev.memory_used_bytes &&
      msg.memory_total_bytes === prev.memory_total_bytes
    ) {
      // Nothing new (a full frame that repeats, say): alive, and the views stay as they are.
      const record = { ...prev, last_seen: now };
      this.record = record;
      return await o.directory.touch(record);
    }
    const record: WorkerRecord = {
      ...prev,
      models: models === prev.models ? prev.models : this.capModels(prev.id, models),
      queue_depth: msg.queue_depth,
      in_flight: msg.in_flight,
      memory_used_bytes: msg.memory_used_bytes,
      memory_total_bytes: msg.memory_total_bytes,
      draining,
      last_seen: now,
    };
    if (record.draining && !prev.draining) {
      o.log("info", "worker draining", { worker_id: record.id, reason: "status" });
    }
    this.record = record;
    this.announce(record.models.length);
    if (this.refused) return;
    await o.directory.put(record);
  }

  /**
   * The worker now announces `count` models; past the fleet's cap the workers announcing the most
   * are closed first (possibly this one).
   */
  announce(count: number): void {
    this.#closeBiggest(this.#hub.budget.announce(this, count), "SVC_FLEET_MAX_MODELS", "announced");
  }

  /** Close the sockets the budget named (the biggest first) as over the cap `setting`. */
  #closeBiggest(talkers: Talker[], setting: string, what: "sent" | "announced"): void {
    if (talkers.length === 0) return;
    const caps = this.#hub.budget.caps;
    const value = what === "sent" ? caps.maxBytesPerS : caps.maxModels;
    for (const t of talkers) {
      const conn = t as FleetConnection;
      this.#hub.o.log("warn", "the fleet is over a cap; closing its biggest talker", {
        worker_id: conn.record?.id,
        cap: setting,
        [setting]: value,
        [what === "sent" ? "bytes_this_second" : "models"]: what === "sent"
          ? conn.windowBytes
          : conn.announced,
        hint: `raise ${setting}, or SVC_FLEET_WORKERS (the fleet size the caps derive from)`,
      });
      conn.refuse(
        "fleetFull",
        `the fleet is over ${setting} (${value}) and this socket ${what} the most: ${RAISE_HINT}`,
      );
    }
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

  /**
   * A heartbeat: answered only when the router has sent the worker nothing for a third of the
   * stale bound. The worker needs to hear from the router within that bound, not twice a second,
   * and each frame sent is a write to the socket (the most a fleet at rest cost the router).
   */
  #ping(t: number, now: number): void {
    if (now - this.#lastSentAt >= this.#hub.o.workerStaleMs / 3) this.send({ type: "pong", t });
  }

  /** Send a frame if the socket is open. */
  send(msg: RouterMessage): void {
    if (this.closed || this.socket.readyState !== OPEN) return;
    this.#lastSentAt = this.#hub.now();
    try {
      this.socket.send(encodeMessage(msg));
    } catch {
      // The socket is going away; onclose does the cleanup.
    }
  }

  /** Tell the worker why (error frame), close the socket, and forget it. */
  refuse(kind: RefusalKind, message: string): void {
    this.refused = true;
    this.#hub.budget.leave(this);
    const r = REFUSALS[kind];
    if ("metric" in r) this.#hub.o.metrics.connections.inc({ result: r.metric });
    this.send({ type: "error", code: r.code, message });
    this.closeSocket(r.close, r.code);
    // A peer that keeps sending (a flood, frames already on the way) would still cost reading
    // its frames: stop reading, and drop the socket if the close does not complete soon.
    try {
      this.socket.pauseReading?.();
    } catch {
      // Already gone.
    }
    this.#hub.terminateLater(this.socket);
    // Its streams fail now (502), not when the queued drop runs: new requests must not be
    // handed a connection whose frames are no longer read.
    this.streams?.close();
    this.#chainDrop(message);
  }

  /** Drop after every queued frame; a failing directory (KV busy) is logged, never unhandled. */
  #chainDrop(why: string): void {
    this.chain = this.chain.then(() => this.drop(why)).catch((err) => {
      this.#hub.o.log("error", "fleet connection cleanup failed", { error: String(err), why });
    });
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
    this.streams?.close();
    this.#hub.budget.leave(this);
    this.#hub.forget(this);
    const rec = this.record;
    if (!rec) return;
    if (this.#hub.byWorker.get(rec.id) === this) this.#hub.byWorker.delete(rec.id);
    const removed = await this.#hub.o.directory.remove(rec.id, this.connId);
    this.#hub.o.log("info", "worker removed", { worker_id: rec.id, why, removed });
  }
}
