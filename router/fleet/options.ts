/** What the fleet hub and its connections are given, and what they need of a worker socket. */
import type { SecretSet } from "@svc/shared/http/secrets";
import type { WorkerKeys } from "@svc/shared/fleet/worker_keys";
import type { Logger } from "@svc/shared/log";
import type { WorkerDirectory } from "../directory/types.ts";
import type { RouterMetrics } from "../metrics/router_metrics.ts";
import type { UrlPolicy } from "./advertised_url.ts";
import type { FleetLimits, FleetTiming, StreamCaps } from "../settings.ts";

/** Settings of the hub: the fleet's timing and what one socket may do, and its collaborators. */
export interface FleetHubOptions
  extends FleetTiming, Pick<FleetLimits, "maxModelsPerWorker" | "maxFramesPerS" | "caps"> {
  directory: WorkerDirectory;
  /** Accepted worker tokens (empty: every worker is refused). */
  workerTokens: SecretSet;
  /** Derivations of the fleet's worker secret (`SVC_WORKER_API_KEY`): id proofs are checked. */
  workerKeys: WorkerKeys | undefined;
  routerId: string;
  /** Where workers may point the router (router/fleet/advertised_url.ts). */
  urlPolicy: UrlPolicy;
  log: Logger;
  metrics: RouterMetrics;
  now?: () => number;
  /** Caps of the request streams of one connection (default: the settings' defaults). */
  streams?: StreamCaps;
}

/**
 * What the hub needs of a worker's socket: Deno's WebSocket (under Deno.serve) and a `ws` socket
 * (under the node:http server) both have it.
 */
export interface FleetSocket {
  readonly readyState: number;
  /** Text: a control frame; bytes: a request-stream frame (binary). */
  send(data: string | Uint8Array): void;
  /** Bytes queued and not yet written (both implementations have it; tests may not). */
  readonly bufferedAmount?: number;
  close(code?: number, reason?: string): void;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number }) => void) | null;
  onerror: (() => void) | null;
  /** Drop the connection without the close handshake (`ws`; absent under Deno.serve). */
  terminate?(): void;
  /** Stop reading from the peer (`ws`; absent under Deno.serve, where reading is cheap). */
  pauseReading?(): void;
}
