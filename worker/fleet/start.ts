/**
 * Starting the worker's link to the router (fleet membership). The process lifecycle calls
 * `startFleetLink` once its HTTP server listens, `drain()` when graceful shutdown starts, and
 * `close()` at exit.
 */
import type { Logger } from "@svc/shared/log";
import { gpuInventory, machineProfileOfGpus } from "../telemetry/gpu.ts";
import type { FleetSettings } from "../config/settings.ts";
import { fleetConfigOf } from "./config.ts";
import {
  type FleetLink,
  FleetLinkImpl,
  type MachineFacts,
  newInstanceKey,
  type WorkerStatusSnapshot,
} from "./link.ts";
import { FleetLinks } from "./links.ts";
import type { ServeRequest } from "./streams/accept.ts";

export type { FleetLink, WorkerStatusSnapshot };

/** Start the dial-back link when the worker has fleet settings (SVC_ROUTER_URL); null otherwise. */
export function startFleetLink(opts: {
  fleet: FleetSettings | null;
  /** The port the HTTP server bound (default advertised URL of the HTTP transport). */
  port: number | null;
  /** The worker's one way in for a request (requests over the connection transport). */
  serve?: ServeRequest;
  servedModels: () => { name: string; bundle: string; state: string }[];
  status: () => WorkerStatusSnapshot;
  log: Logger;
}): FleetLink | null {
  if (opts.fleet === null) return null;
  // Without a way in for requests (a test's fake worker) the link can only offer HTTP.
  const fleet = opts.serve ? opts.fleet : { ...opts.fleet, transport: "http" as const };
  const cfg = fleetConfigOf(fleet, opts.port);
  opts.log("info", "joining the fleet", {
    routers: cfg.routerWsUrls.join(", "),
    worker_id: cfg.workerId,
    transport: cfg.transport,
    advertise_url: cfg.advertiseUrl,
    bundle: cfg.bundle,
  });
  // One detection for every link (each asks once, before its first dial).
  let machine: Promise<MachineFacts> | undefined;
  const detect = () =>
    machine ??= (async () => {
      // A failed detection reads as no GPU (gpuInventory never rejects).
      const gpus = await gpuInventory();
      const machineProfile = cfg.machineProfile ?? machineProfileOfGpus(gpus);
      return {
        machineProfile,
        gpuCount: gpus.length,
        gpuTypes: [...new Set(gpus.map((g) => g.gpu_type))],
      };
    })();
  const instanceKey = newInstanceKey();
  const urls = cfg.routerWsUrls.length > 0 ? cfg.routerWsUrls : [cfg.routerWsUrl];
  const links = urls.map((routerWsUrl) =>
    new FleetLinkImpl({ ...cfg, routerWsUrl }, {
      servedModels: opts.servedModels,
      status: opts.status,
      log: opts.log,
      serve: opts.serve,
      detect,
      instanceKey,
    })
  );
  return links.length === 1 ? links[0] : new FleetLinks(links);
}
