/**
 * The stack of `npm start` outlives its launcher unless it watches it: `npm start` runs
 * `sh -c "deno task start"`, which runs node (npm's `deno` wrapper), which runs `deno task`,
 * which runs the deno wrapper again under deno, which runs `deno run infra/start_embedded.ts`.
 * A SIGTERM to npm ends npm (and sh), but nobody passes it on: without a watch the router keeps
 * its port. So `deno task start` notes its launchers when it starts (its ancestors in its own
 * process group: what a shell started as one job, never the shell itself) and stops as on
 * SIGTERM once any of them is gone.
 *
 * Deno refuses every read of /proc without --allow-all, so the process table comes from `ps`
 * (POSIX `-o pid= -o ppid= -o pgid=`: Linux and macOS), one short run per check. Without `ps`
 * only the direct parent is watched (`Deno.ppid`).
 */

/** One row of the process table. */
export interface ProcRow {
  pid: number;
  ppid: number;
  pgid: number;
}

/** Reads rows of the process table: of `pids`, or of every process when omitted. */
export type ProcTable = (pids?: readonly number[]) => Promise<ProcRow[]>;

/** Parse `ps -o pid= -o ppid= -o pgid=` output (one process per line). */
export function parsePs(text: string): ProcRow[] {
  const out: ProcRow[] = [];
  for (const line of text.split("\n")) {
    const f = line.trim().split(/\s+/).map(Number);
    if (f.length === 3 && f.every((n) => Number.isInteger(n) && n >= 0)) {
      out.push({ pid: f[0], ppid: f[1], pgid: f[2] });
    }
  }
  return out;
}

/** The table through `ps` (throws when `ps` cannot run). */
export const psTable: ProcTable = async (pids) => {
  const select = pids ? ["-p", pids.join(",")] : ["-e"];
  const out = await new Deno.Command("ps", {
    args: [...select, "-o", "pid=", "-o", "ppid=", "-o", "pgid="],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  // ps exits 1 when a listed pid is gone: the rows it printed are still the answer.
  return parsePs(new TextDecoder().decode(out.stdout));
};

/**
 * The launchers of process `self` in `rows`: its ancestors in its own process group, nearest
 * first. The walk stops at the first ancestor of another group (a shell with job control starts
 * each job in a group of its own) and at pid 1.
 */
export function launchersOf(self: number, rows: readonly ProcRow[]): ProcRow[] {
  const byPid = new Map(rows.map((r) => [r.pid, r]));
  const me = byPid.get(self);
  if (!me) return [];
  const out: ProcRow[] = [];
  let next = byPid.get(me.ppid);
  while (next && next.pid > 1 && next.pgid === me.pgid && out.length < 64) {
    out.push(next);
    next = byPid.get(next.ppid);
  }
  return out;
}

/**
 * A launcher that is gone already when the watch starts: the farthest launcher is not its group's
 * leader, yet its parent is of another group (or gone): the job's first process (npm) exited and
 * the rest of the chain was handed to init. Undefined when the chain is whole.
 */
export function orphaned(known: readonly ProcRow[], rows: readonly ProcRow[]): string | undefined {
  const top = known.at(-1);
  if (!top || top.pid === top.pgid) return undefined;
  const parent = rows.find((r) => r.pid === top.ppid);
  return parent && parent.pgid === top.pgid
    ? undefined
    : `the process that started launcher ${top.pid} exited`;
}

/**
 * Which launcher is gone, as a message, or undefined when each is still there with the same
 * parent. A launcher whose parent changed was handed to init: that parent exited.
 */
export function goneLauncher(
  known: readonly ProcRow[],
  now: readonly ProcRow[],
): string | undefined {
  const byPid = new Map(now.map((r) => [r.pid, r]));
  for (const p of known) {
    const r = byPid.get(p.pid);
    if (!r) return `launcher process ${p.pid} exited`;
    if (r.ppid !== p.ppid) return `launcher process ${p.ppid} exited`;
  }
  return undefined;
}

/** Options of {@link launcherGone}. */
export interface LauncherWatchOptions {
  intervalMs?: number;
  table?: ProcTable;
  /** This process and its parent (tests give others). */
  pid?: number;
  ppid?: () => number;
}

/**
 * Resolves with a reason once a launcher of this process is gone, checked every `intervalMs`
 * (the timer does not keep the process alive). Never rejects: a table that cannot be read leaves
 * the direct-parent watch.
 */
export async function launcherGone(o: LauncherWatchOptions = {}): Promise<string> {
  const table = o.table ?? psTable;
  const ppid = o.ppid ?? (() => Deno.ppid);
  const parent = ppid();
  let known: ProcRow[] = [];
  try {
    const rows = await table();
    known = launchersOf(o.pid ?? Deno.pid, rows);
    const early = orphaned(known, rows);
    if (early !== undefined) return early;
  } catch {
    // No ps: the parent alone.
  }
  return await new Promise((resolve) => {
    let checking = false;
    const timer = setInterval(async () => {
      if (checking) return;
      checking = true;
      let gone = ppid() !== parent ? `parent process ${parent} exited` : undefined;
      if (gone === undefined && known.length > 0) {
        try {
          gone = goneLauncher(known, await table(known.map((p) => p.pid)));
        } catch {
          known = []; // ps went away: keep watching the parent
        }
      }
      checking = false;
      if (gone === undefined) return;
      clearInterval(timer);
      resolve(gone);
    }, o.intervalMs ?? 1000);
    Deno.unrefTimer(timer);
  });
}
