/**
 * A hand-driven fleet socket for attack tests: it holds a valid worker token (as a rogue or
 * compromised machine would) and sends whatever frames the test scripts, recording what the
 * router answers and how it closes the socket.
 */
import {
  decodeRouterMessage,
  FLEET_PATH,
  type RegisterMessage,
  type RouterMessage,
  type StatusMessage,
} from "@svc/shared/fleet/protocol";
import { TEST_TOKEN } from "./router.ts";
import { waitFor } from "../../helpers/wait.ts";

/** A raw fleet socket and what came back on it. */
export interface RogueSocket {
  ws: WebSocket;
  /** Router frames received so far. */
  frames: RouterMessage[];
  /** Resolves with the close event (never rejects). */
  closed: Promise<CloseEvent>;
  /** Send one frame (objects are JSON-encoded). */
  send(frame: unknown): void;
  close(): void;
}

/** Open a fleet socket to `routerUrl` with `token`; resolves once it is open. */
export async function openRogue(routerUrl: string, token = TEST_TOKEN): Promise<RogueSocket> {
  const ws = new WebSocket(routerUrl.replace(/^http/, "ws") + FLEET_PATH, {
    headers: { authorization: `Bearer ${token}` },
  });
  const frames: RouterMessage[] = [];
  ws.onmessage = (e) => {
    const d = decodeRouterMessage(e.data);
    if (d.ok) frames.push(d.message);
  };
  const closed = new Promise<CloseEvent>((resolve) => ws.addEventListener("close", resolve));
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener("open", () => resolve(), { once: true });
    ws.addEventListener("error", () => reject(new Error("fleet socket failed")), { once: true });
  });
  return {
    ws,
    frames,
    closed,
    send: (frame) => ws.send(typeof frame === "string" ? frame : JSON.stringify(frame)),
    close: () => {
      try {
        ws.close();
      } catch {
        // already closed
      }
    },
  };
}

/** A register frame for worker `id` advertising `url`, overridable field by field. */
export function registerFrame(
  id: string,
  url: string,
  extra: Partial<RegisterMessage> = {},
): RegisterMessage {
  return {
    type: "register",
    protocol: 1,
    worker_id: id,
    url,
    machine_profile: "cpu",
    pool: "cpu",
    bundle: "default",
    version: "0.1.0",
    gpus: { count: 0, types: [] },
    models: [{ name: "fixture/dense", bundle: "default", state: "loaded" }],
    draining: false,
    ...extra,
  };
}

/** A status frame naming `models` (all loaded, no queue). */
export function statusFrame(seq: number, models: string[]): StatusMessage {
  return {
    type: "status",
    seq,
    models: models.map((name) => ({ name, state: "loaded", queue_depth: 0 })),
    queue_depth: 0,
    in_flight: 0,
    memory_used_bytes: 0,
    memory_total_bytes: 0,
    draining: false,
  };
}

/** Resolve once the router has answered `registered` on `s` (or throw after `ms`). */
export async function registered(s: RogueSocket, ms = 5000): Promise<void> {
  await waitFor(
    () => {
      if (s.frames.some((f) => f.type === "registered")) return true;
      if (s.ws.readyState >= WebSocket.CLOSING) throw new Error("socket closed before registered");
      return false;
    },
    "the registered frame",
    { timeoutMs: ms, everyMs: 10 },
  );
}
