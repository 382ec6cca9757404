/**
 * `deno task drain <worker-id>`: the router stops sending new requests to that worker; what it
 * is running or has queued finishes. The worker keeps running (stop it when `deno task status`
 * shows it idle); it serves again after it re-registers (a restart).
 */
import { callRouter, COMMON_HELP, type OpsOptions, runOpsTask, UsageError } from "./cli.ts";

const HELP = `usage: npx deno task drain [options] <worker-id>

Tell the router to stop sending new requests to one worker (POST
/v1/admin/workers/<id>/drain); work already on it finishes. Worker ids are in
\`npx deno task status\`. The drain holds until the worker re-registers (e.g. a restart).

${COMMON_HELP}`;

/** Drain the worker named on the command line. */
export async function drain(opts: OpsOptions): Promise<string> {
  if (opts.positionals.length !== 1) {
    throw new UsageError(`name exactly one worker id\n\n${HELP}`);
  }
  const id = opts.positionals[0];
  const body = await callRouter(
    opts,
    "POST",
    `/v1/admin/workers/${encodeURIComponent(id)}/drain`,
  ) as { worker_id: string; state: string; in_flight?: number; queue_depth?: number };
  if (opts.json) return JSON.stringify(body, null, 2);
  if (body.state === "drain_requested") {
    // Several routers (SVC_DIRECTORY=kv): the one holding the worker carries it out shortly.
    return `worker ${body.worker_id}: drain requested from the router holding it; ` +
      "`npx deno task status` shows it draining once that router has carried it out";
  }
  return `worker ${body.worker_id} is draining: no new requests go to it; ` +
    `${body.in_flight} in flight and ${body.queue_depth} queued finish there`;
}

if (import.meta.main) Deno.exit(await runOpsTask(Deno.args, HELP, drain));
