/**
 * `deno task status`: the fleet as the router sees it (GET /health), as readable tables: pools,
 * workers, the models that are not just available (loaded, loading, failed) with their queue
 * depths, and pending demand.
 */
import type { ClientHealthBody, HealthBody } from "@svc/shared/schemas/router";
import {
  callRouter,
  COMMON_HELP,
  mb,
  OpsError,
  type OpsOptions,
  runOpsTask,
  table,
} from "./cli.ts";

const HELP = `usage: npx deno task status [options]

The fleet as the router sees it (GET /health): pools, workers and their state, the models
loaded, loading or failed on each worker with queue depths, and pending demand.

${COMMON_HELP}`;

/** The status text of a /health body. */
export function formatStatus(h: HealthBody, url: string): string {
  const out = [
    `router ${url}  ${h.router_id}  version ${h.version}  ${h.status}  ` +
    `${h.healthy_workers}/${h.worker_count} workers serving  directory ${h.directory}`,
    "",
  ];
  out.push(
    h.pools.length === 0 ? "pools: none (no worker registered)" : table([
      ["POOL", "BUNDLE", "WORKERS", "SERVING"],
      ...h.pools.map((p) => [p.pool, p.bundle, p.workers, p.serving]),
    ]),
  );
  if (h.workers.length > 0) {
    out.push(
      "",
      table([
        ["WORKER", "POOL", "BUNDLE", "STATE", "IN FLIGHT", "QUEUE", "MEMORY", "LAST SEEN", "URL"],
        ...h.workers.map((w) => [
          w.id,
          w.pool,
          w.bundle,
          w.state,
          w.in_flight,
          w.queue_depth,
          mb(w.memory_used_bytes),
          `${(w.last_seen_ms_ago / 1000).toFixed(1)} s ago`,
          w.url,
        ]),
      ]),
    );
    const rows = h.workers.flatMap((w) =>
      w.models.map((m) => [m.name, w.id, m.state, m.queue_depth])
    ).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    const available = h.models.length - new Set(rows.map((r) => r[0])).size;
    out.push(
      "",
      rows.length === 0
        ? `models: none loaded yet (${h.models.length} available)`
        : table([["MODEL", "WORKER", "STATE", "QUEUE"], ...rows]) +
          `\n(${available} more available, not loaded)`,
    );
  }
  if (h.pending_demand.length > 0) {
    out.push(
      "",
      table([
        ["PENDING POOL", "BUNDLE", "REQUESTS", "SINCE"],
        ...h.pending_demand.map((d) => [
          d.machine_profile,
          d.bundle,
          d.pending,
          new Date(d.first_at).toISOString(),
        ]),
      ]),
    );
  }
  return out.join("\n");
}

/** Fetch /health and format it (or pass its JSON through). */
export async function status(opts: OpsOptions): Promise<string> {
  const body = await callRouter(opts, "GET", "/health") as HealthBody | ClientHealthBody;
  if ("view" in body) {
    throw new OpsError(
      "the router shows this key only its summary: the fleet's workers need an admin key " +
        "(--api-key with a key of SVC_ADMIN_KEYS)",
    );
  }
  return opts.json ? JSON.stringify(body, null, 2) : formatStatus(body, opts.url);
}

if (import.meta.main) Deno.exit(await runOpsTask(Deno.args, HELP, status));
