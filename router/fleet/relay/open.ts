/**
 * The relay between router instances, built from the settings (KV mode only): the asking end
 * for forwarding, the holding end serving this instance's inbox.
 */
import type { Logger } from "@svc/shared/log";
import type { BodyBudget } from "@svc/shared/http/body_budget";
import type { DirectorySettings, RelaySettings } from "../../settings.ts";
import { RelayClient } from "./client.ts";
import { RelayInbox } from "./inbox.ts";
import { relayServe, type RelayServeDeps } from "./serve.ts";

/** How much less often relay keys are polled where watches see every writer. */
const WATCHED_POLL_FACTOR = 40;

/**
 * How often relay keys are polled: every `SVC_RELAY_POLL_MS` on a local file (other processes'
 * writes wake no watch there), forty times less often where watches see every writer (Deno
 * Deploy's database, a `denokv` server), since each poll is a billed read.
 */
export function relayPollMs(relay: RelaySettings, directory: DirectorySettings): number {
  const file = directory.kvUrl === undefined && directory.kvPath !== undefined;
  return file ? relay.pollMs : relay.pollMs * WATCHED_POLL_FACTOR;
}

/** Both ends of the relay. */
export interface OpenedRelay {
  client: RelayClient;
  inbox: RelayInbox;
}

/** The relay of `settings` over `kv`; undefined when it is off (`SVC_RELAY_MAX_BODY_BYTES=0`). */
export function openRelay(opts: {
  kv: Deno.Kv;
  relay: RelaySettings;
  directory: DirectorySettings;
  routerId: string;
  timeoutMs: number;
  serve: RelayServeDeps;
  /** The instance's body budget: the bodies it serves for others count in it. */
  budget?: BodyBudget;
  log: Logger;
}): OpenedRelay | undefined {
  if (opts.relay.maxBodyBytes === 0) return undefined;
  const pollMs = relayPollMs(opts.relay, opts.directory);
  const common = {
    kv: opts.kv,
    prefix: opts.directory.kvPrefix,
    routerId: opts.routerId,
    maxBodyBytes: opts.relay.maxBodyBytes,
    pollMs,
    log: opts.log,
  };
  return {
    client: new RelayClient({
      ...common,
      pickupMs: opts.relay.pickupMs,
      timeoutMs: opts.timeoutMs,
    }),
    inbox: new RelayInbox({
      ...common,
      pickupMs: opts.relay.pickupMs,
      serve: relayServe(opts.serve),
      budget: opts.budget,
    }),
  };
}
