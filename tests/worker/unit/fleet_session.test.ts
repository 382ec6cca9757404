/**
 * One fleet-link session against a scripted socket: what it sends, what ends it, and how. The
 * real link against the real router (sockets, timers, reconnects) is in
 * tests/router/unit/fleet_link.test.ts.
 */
import assert from "node:assert/strict";
import { CLOSE_CODES, type RouterMessage, type WorkerMessage } from "@svc/shared/fleet/protocol";
import { LinkSession, type SessionHost } from "#worker/fleet/session.ts";

/** A socket the test drives by hand (only what the session uses). */
class ScriptedSocket extends EventTarget {
  readyState: number = WebSocket.CONNECTING;
  readonly sent: WorkerMessage[] = [];
  closedWith: { code?: number; reason?: string } | undefined;
  onopen: ((ev: Event) => void) | null = null;
  onmessage: ((ev: MessageEvent) => void) | null = null;
  onerror: ((ev: Event) => void) | null = null;
  onclose: ((ev: CloseEvent) => void) | null = null;

  send(data: string): void {
    this.sent.push(JSON.parse(data));
  }
  close(code?: number, reason?: string): void {
    this.closedWith = { code, reason };
    this.readyState = WebSocket.CLOSING;
  }

  open(): void {
    this.readyState = WebSocket.OPEN;
    this.onopen?.(new Event("open"));
  }
  receive(msg: RouterMessage): void {
    this.onmessage?.(new MessageEvent("message", { data: JSON.stringify(msg) }));
  }
  fail(message: string): void {
    this.onerror?.(new ErrorEvent("error", { message }));
  }
  /** The peer closed the socket with `code`. */
  closeFromPeer(code: number): void {
    this.readyState = WebSocket.CLOSED;
    const ev = new CloseEvent("close", { code });
    this.onclose?.(ev);
    this.dispatchEvent(ev);
  }
}

const REGISTERED: RouterMessage = {
  type: "registered",
  protocol: 1,
  router_version: "0.1.0",
  router_id: "r1",
  // Long beats: these tests never wait for a tick.
  heartbeat_interval_ms: 60_000,
  status_interval_ms: 60_000,
  stale_after_ms: 180_000,
};

const STATUS: WorkerMessage = {
  type: "status",
  seq: 0,
  models: [],
  queue_depth: 0,
  in_flight: 0,
  memory_used_bytes: 0,
  memory_total_bytes: 0,
  draining: false,
};

/** A session over a scripted socket, with every host call recorded. */
function session() {
  const socket = new ScriptedSocket();
  const calls: string[] = [];
  const host: SessionHost = {
    routerWsUrl: "ws://router.test/fleet/v1/connect",
    token: "t".repeat(16),
    dial: () => socket as unknown as WebSocket,
    registerFrame: () => ({ type: "ping", t: 1 }), // any frame: the session does not read it
    statusFrame: () => STATUS,
    onRegistered: (msg) => calls.push(`registered:${msg.router_id}`),
    onDrainAck: () => calls.push("ack"),
    noteFailure: (m) => calls.push(`failure:${m}`),
    log: (level, msg) => calls.push(`${level}:${msg}`),
  };
  return { s: new LinkSession(host), socket, calls };
}

Deno.test("fleet session: register on open, status at once when registered, answers pings", async () => {
  const { s, socket, calls } = session();
  assert.equal(s.connected, false);
  socket.open();
  assert.deepEqual(socket.sent, [{ type: "ping", t: 1 }], "the register frame goes first");
  socket.receive(REGISTERED);
  assert.equal(s.connected, true);
  assert.deepEqual(calls, ["registered:r1"]);
  assert.deepEqual(socket.sent.at(-1), STATUS);
  socket.receive({ type: "ping", t: 42 });
  assert.deepEqual(socket.sent.at(-1), { type: "pong", t: 42 });
  socket.receive({ type: "ack", of: "drain" });
  assert.deepEqual(calls.at(-1), "ack");
  // A second `registered` on the same socket changes nothing.
  socket.receive({ ...REGISTERED, router_id: "r2" });
  assert.deepEqual(calls.filter((c) => c.startsWith("registered")), ["registered:r1"]);
  const ending = s.end(CLOSE_CODES.normal, "test over");
  socket.closeFromPeer(CLOSE_CODES.normal);
  await ending;
  assert.deepEqual(await s.ended, { registered: true, immediate: false, refused: false });
});

Deno.test("fleet session: a router going away (1001) after registration means dial again at once", async () => {
  const { s, socket, calls } = session();
  socket.open();
  socket.receive(REGISTERED);
  socket.closeFromPeer(CLOSE_CODES.goingAway);
  assert.deepEqual(await s.ended, { registered: true, immediate: true, refused: false });
  assert.equal(s.connected, false);
  // Nothing after the end reaches the host: the socket's handlers are detached.
  const before = calls.length;
  socket.receive({ type: "ack", of: "drain" });
  assert.equal(calls.length, before);
});

Deno.test("fleet session: refusals (protocol mismatch, HTTP 401) back off to the cap", async () => {
  const mismatch = session();
  mismatch.socket.open();
  mismatch.socket.receive({ type: "error", code: "PROTOCOL_MISMATCH", message: "want 2" });
  mismatch.socket.closeFromPeer(CLOSE_CODES.protocolMismatch);
  assert.deepEqual(await mismatch.s.ended, { registered: false, immediate: false, refused: true });
  assert.ok(mismatch.calls.includes("error:router refused the worker"));

  const unauthorized = session();
  unauthorized.socket.fail("Handshake not OK: 401 Unauthorized");
  unauthorized.socket.closeFromPeer(1006);
  assert.deepEqual(await unauthorized.s.ended, {
    registered: false,
    immediate: false,
    refused: true,
  });
  assert.match(unauthorized.calls[0], /^failure:.*HTTP 401.*SVC_WORKER_TOKEN/);

  // A full fleet (503 before the upgrade): the worker's log names the caps and the setting.
  const full = session();
  full.socket.fail("failed to connect to WebSocket: Invalid status code: 503");
  full.socket.closeFromPeer(1006);
  assert.equal((await full.s.ended).refused, false, "backs off as usual, the cap may be raised");
  assert.match(full.calls[0], /^failure:.*HTTP 503.*SVC_FLEET_MAX_CONNECTIONS.*SVC_FLEET_WORKERS/);

  const unreachable = session();
  unreachable.socket.fail("connection refused");
  unreachable.socket.closeFromPeer(1006);
  assert.deepEqual(await unreachable.s.ended, {
    registered: false,
    immediate: false,
    refused: false,
  });
  assert.deepEqual(unreachable.calls, ["failure:cannot reach the router: connection refused"]);
});

Deno.test("fleet session: end() closes the socket with the given code and waits for the close", async () => {
  const { s, socket } = session();
  socket.open();
  socket.receive(REGISTERED);
  let closed = false;
  const ending = s.end(CLOSE_CODES.normal, "worker shutting down").then(() => closed = true);
  assert.deepEqual(socket.closedWith, { code: CLOSE_CODES.normal, reason: "worker shutting down" });
  assert.equal(s.connected, false);
  await Promise.resolve();
  assert.equal(closed, false, "still waiting for the close handshake");
  socket.closeFromPeer(CLOSE_CODES.normal);
  await ending;
  assert.deepEqual(await s.ended, { registered: true, immediate: false, refused: false });
  // Ending twice is harmless and does not wait.
  await s.end(CLOSE_CODES.normal, "again");
});

Deno.test("session: ended while its real socket still connects, the process carries on", async () => {
  // A listener that never answers the upgrade: the socket stays connecting until the session ends
  // (`ws` throws an error nobody listens to as an uncaught exception: it ended the bench process).
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  (async () => {
    for await (const c of listener) held.push(c);
  })().catch(() => {});
  const port = (listener.addr as Deno.NetAddr).port;
  const s = new LinkSession({
    routerWsUrl: `ws://127.0.0.1:${port}/fleet/v1/connect`,
    token: "t".repeat(16),
    registerFrame: () => STATUS,
    statusFrame: () => undefined,
    onRegistered: () => {},
    onDrainAck: () => {},
    noteFailure: () => {},
    log: () => {},
  });
  try {
    await new Promise((resolve) => setTimeout(resolve, 100));
    await s.end(CLOSE_CODES.normal, "worker shutting down");
    assert.equal((await s.ended).registered, false);
    await new Promise((resolve) => setTimeout(resolve, 100));
  } finally {
    listener.close();
    for (const c of held) c.close();
  }
});
