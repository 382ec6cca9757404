/**
 * Token holders flooding a router's fleet endpoint (issue 26.1): `sockets` connections, each
 * registering with `models` names of `nameLength` characters and then sending a status frame
 * naming them `fps` times a second, each within the per-socket caps. A socket the router closes
 * dials again after a short pause, as a persistent attacker would, until the flood ends.
 */
import { FLEET_PATH } from "@svc/shared/fleet/protocol";

/** Options of a flood. */
export interface FloodOptions {
  sockets: number;
  fps: number;
  models: number;
  nameLength: number;
  /** Pause before a closed socket dials again. */
  redialMs?: number;
}

/** What the flood did. */
export interface FloodStats {
  dials: number;
  framesSent: number;
  bytesSent: number;
  /** Close codes the router used, with counts. */
  closes: Map<number, number>;
}

/** A running flood; `stop()` closes every socket and resolves with the stats. */
export interface Flood {
  stats: FloodStats;
  stop(): Promise<FloodStats>;
}

/** Start flooding `routerUrl` with the worker `token`. */
export function startFlood(routerUrl: string, token: string, o: FloodOptions): Flood {
  const stats: FloodStats = { dials: 0, framesSent: 0, bytesSent: 0, closes: new Map() };
  const names = Array.from(
    { length: o.models },
    (_, i) =>
      `flood/${String(i).padStart(5, "0")}-${"n".repeat(o.nameLength)}`.slice(0, o.nameLength),
  );
  // Built once: every socket sends the same bytes (the flood must not measure the test process).
  const status = JSON.stringify({
    type: "status",
    seq: 1,
    models: names.map((name) => ({ name, state: "loaded", queue_depth: 0 })),
    queue_depth: 0,
    in_flight: 0,
    memory_used_bytes: 0,
    memory_total_bytes: 0,
    draining: false,
  });
  const register = (i: number) =>
    JSON.stringify({
      type: "register",
      protocol: 1,
      worker_id: `flood-${i}`,
      url: "http://127.0.0.1:9",
      machine_profile: "flood",
      pool: "flood",
      bundle: "default",
      version: "0.1.0",
      gpus: { count: 0, types: [] },
      models: names.map((name) => ({ name, bundle: "default", state: "loaded" })),
      draining: false,
    });
  let stopped = false;
  const live = new Set<WebSocket>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const later = (fn: () => void, ms: number) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  const dial = (i: number) => {
    if (stopped) return;
    stats.dials++;
    const ws = new WebSocket(routerUrl.replace(/^http/, "ws") + FLEET_PATH, {
      headers: { authorization: `Bearer ${token}` },
    });
    live.add(ws);
    let tick: ReturnType<typeof setInterval> | undefined;
    const send = (text: string) => {
      if (ws.readyState !== WebSocket.OPEN) return;
      try {
        ws.send(text);
        stats.framesSent++;
        stats.bytesSent += text.length;
      } catch {
        // closing
      }
    };
    ws.onopen = () => {
      send(register(i));
      tick = setInterval(() => send(status), Math.round(1000 / o.fps));
    };
    ws.onerror = () => {};
    ws.onclose = (ev) => {
      clearInterval(tick);
      live.delete(ws);
      stats.closes.set(ev.code, (stats.closes.get(ev.code) ?? 0) + 1);
      later(() => dial(i), o.redialMs ?? 100);
    };
  };
  for (let i = 0; i < o.sockets; i++) dial(i);
  return {
    stats,
    async stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      const closing = [...live].map((ws) =>
        new Promise<void>((resolve) => {
          // A socket whose close does not complete is given up on after 2 s.
          const giveUp = setTimeout(resolve, 2000);
          timers.add(giveUp);
          ws.addEventListener("close", () => {
            clearTimeout(giveUp);
            resolve();
          });
          try {
            ws.close();
          } catch {
            resolve();
          }
        })
      );
      await Promise.all(closing);
      for (const t of timers) clearTimeout(t);
      return stats;
    },
  };
}
