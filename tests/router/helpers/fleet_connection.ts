/**
 * One router-side fleet connection (router/fleet/connection.ts) on a scripted socket, with the
 * hub's services around it and a directory that counts its writes: the unit tests of the fleet
 * socket drive it frame by frame under fake time.
 */
import { SecretSet } from "@svc/shared/http/secrets";
import type { RouterMessage, WorkerMessage } from "@svc/shared/fleet/protocol";
import { FleetConnection, type HubServices } from "#router/fleet/connection.ts";
import { FleetBudget } from "#router/fleet/budget.ts";
import { CapRefusalLog } from "#router/fleet/cap_log.ts";
import type { FleetSocket } from "#router/fleet/options.ts";
import { MemoryWorkerDirectory } from "#router/directory/memory.ts";
import type { WorkerRecord } from "#router/directory/types.ts";
import { createRouterMetrics } from "#router/metrics/router_metrics.ts";

/** A socket whose peer is the test: frames in by `deliver`, frames out in `sent`. */
export class ScriptedSocket implements FleetSocket {
  readyState = 1;
  readonly sent: RouterMessage[] = [];
  closedWith: { code: number; reason: string } | undefined;
  paused = false;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number }) => void) | null = null;
  onerror: (() => void) | null = null;

  send(data: string): void {
    this.sent.push(JSON.parse(data));
  }
  close(code?: number, reason?: string): void {
    if (this.readyState !== 1) return;
    this.readyState = 2;
    this.closedWith = { code: code ?? 1005, reason: reason ?? "" };
  }
  terminate(): void {
    this.readyState = 3;
  }
  pauseReading(): void {
    this.paused = true;
  }
  /** The worker sends `msg` (or raw text). */
  deliver(msg: WorkerMessage | string): void {
    this.onmessage?.({ data: typeof msg === "string" ? msg : JSON.stringify(msg) });
  }
  /** The close code the router used, if it closed the socket. */
  closeCode(): number | undefined {
    return this.closedWith?.code;
  }
  /** The error frames the router sent, by code. */
  errors(): string[] {
    return this.sent.flatMap((m) => m.type === "error" ? [m.code] : []);
  }
}

/** The in-memory directory, counting its writes (`put`) and touches. */
export class CountingDirectory extends MemoryWorkerDirectory {
  puts = 0;
  touches = 0;

  override put(record: WorkerRecord): Promise<void> {
    this.puts++;
    return super.put(record);
  }

  override touch(record: WorkerRecord): Promise<void> {
    this.touches++;
    return super.touch(record);
  }
}

/** A connection on a scripted socket, with the hub's services around it. */
export async function connection(maxFramesPerS = 20) {
  const directory = new CountingDirectory({ staleMs: 30_000, now: Date.now });
  const metrics = createRouterMetrics();
  const logs: string[] = [];
  const hub: HubServices = {
    o: {
      directory,
      workerTokens: await SecretSet.create(["fleet-token-0123456789"]),
      workerKeys: undefined,
      routerId: "router-test",
      urlPolicy: { allowedNetworks: [], localStack: true, alsoAllowed: [], resolve: undefined },
      workerStaleMs: 30_000,
      heartbeatIntervalMs: 5_000,
      statusIntervalMs: 1_000,
      maxModelsPerWorker: 1000,
      maxFramesPerS,
      caps: { maxConnections: 100, maxModels: 10_000, maxBytesPerS: 10_000_000 },
      log: (_level, msg) => logs.push(msg),
      metrics,
    },
    now: Date.now,
    byWorker: new Map(),
    forget: () => {},
    budget: new FleetBudget(
      { maxConnections: 100, maxModels: 10_000, maxBytesPerS: 10_000_000 },
      Date.now,
    ),
    terminateLater: () => {},
    capRefusals: new CapRefusalLog((_level, msg) => logs.push(msg), Date.now),
  };
  const socket = new ScriptedSocket();
  const conn = new FleetConnection(socket, hub);
  return { socket, conn, directory, hub, logs };
}
