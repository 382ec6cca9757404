/** Build the configured worker directory (memory, or Deno KV for many isolates). */
import type { DirectorySettings } from "../settings.ts";
import type { Logger } from "@svc/shared/log";
import { KvWorkerDirectory } from "./kv.ts";
import { MemoryWorkerDirectory } from "./memory.ts";
import type { WorkerDirectory } from "./types.ts";

/** A directory plus the cleanup that releases what it opened. */
export interface OpenedDirectory {
  directory: WorkerDirectory;
  /** The KV database in KV mode (the result cache's second tier, demand and drains share it). */
  kv: Deno.Kv | undefined;
  close(): Promise<void>;
}

/**
 * Open the directory the settings ask for; KV opens `SVC_KV_URL`, `SVC_KV_PATH` or the platform
 * default. A `kv`
 * passed in (tests sharing one database) is used instead and left open on close.
 */
export async function openDirectory(
  settings: DirectorySettings,
  log: Logger,
  sharedKv?: Deno.Kv,
  routerId?: string,
): Promise<OpenedDirectory> {
  if (settings.kind === "memory" && !sharedKv) {
    const directory = new MemoryWorkerDirectory({
      staleMs: settings.staleMs,
      learned: settings.learned,
    });
    return { directory, kv: undefined, close: () => directory.close() };
  }
  // A URL speaks KV Connect (a self-hosted denokv; DENO_KV_ACCESS_TOKEN is read by Deno itself).
  const kv = sharedKv ?? await Deno.openKv(settings.kvUrl ?? settings.kvPath);
  const directory = new KvWorkerDirectory({
    kv,
    prefix: settings.kvPrefix,
    staleMs: settings.staleMs,
    refreshMs: kvPollMs(settings),
    renewMs: settings.kvRenewMs,
    routerId,
    learned: settings.learned,
    log,
  });
  await directory.refresh();
  return {
    directory,
    kv,
    close: async () => {
      await directory.close();
      if (!sharedKv) kv.close();
    },
  };
}

/** How much less often change counters are polled where watches see every writer. */
const WATCHED_POLL_FACTOR = 10;

/**
 * How often the KV change counters are polled: every `SVC_KV_REFRESH_MS` on a local file (other
 * processes' writes wake no watch there), ten times less often as a safety net where watches see
 * every writer (Deno Deploy's database, a `denokv` server), since each poll is a billed read.
 */
export function kvPollMs(settings: DirectorySettings): number {
  const file = settings.kvUrl === undefined && settings.kvPath !== undefined;
  return file ? settings.kvRefreshMs : settings.kvRefreshMs * WATCHED_POLL_FACTOR;
}
