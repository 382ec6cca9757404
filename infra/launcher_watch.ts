/**
 * The stack of `npm start` outlives its launcher unless it watches it: `npm start` runs
 * `sh -c "deno task start"`, which runs node (npm's `deno` wrapper), which runs `deno task`,
 * which runs the deno wrapper again under deno, which runs `deno run infra/start_embedded.ts`.
 * A SIGTERM to npm ends npm (and sh), but nobody passes it on: without a watch the router keeps
 * its port. So `deno task start` notes its launchers when it starts and stops as on SIGTERM once
 * any of them exits.
 *
 * The launchers are the ancestors that are launch tools: npm and npx, node and deno (the
 * wrappers, the task runner, a test runner that started the stack), and the script shell npm
 * runs (`sh -c deno task ...`). The walk stops at the first other process: the user's shell,
 * which may exit while the stack runs on (`nohup npm start &`, a shell that ran the tests in the
 * background) and is never watched. For the same reason the topmost launcher may change parent
 * (handed to init when its shell exits); every other launcher changing parent means its parent
 * exited. Ctrl-C in a terminal reaches the whole foreground job and stops the stack by itself.
 *
 * Deno refuses every read of /proc without --allow-all, so the process table comes from `ps`
 * (POSIX `-o pid= -o ppid= -o pgid= -o args=`: Linux and macOS), one short run per check.
 * Without `ps` only the direct parent is watched (`Deno.ppid`).
 */

/** One row of the process table (`args`: the command line, as `ps` shows it). */
export interface ProcRow {
  pid: number;
  ppid: number;
  pgid: number;
  args?: string;
}

/** Reads rows of the process table: of `pids`, or of every process when omitted. */
export type ProcTable = (pids?: readonly number[]) => Promise<ProcRow[]>;

/** Parse `ps -o pid= -o ppid= -o pgid= -o args=` output (one process per line). */
export function parsePs(text: string): ProcRow[] {
  const out: ProcRow[] = [];
  for (const line of text.split("\n")) {
    const m = /^\s*(\d+)\s+(\d+)\s+(\d+)(?:\s+(.*))?$/.exec(line);
    if (!m) continue;
    const row: ProcRow = { pid: Number(m[1]), ppid: Number(m[2]), pgid: Number(m[3]) };
    if (m[4] !== undefined) row.args = m[4].trim();
    out.push(row);
  }
  return out;
}

/** The table through `ps` (throws when `ps` cannot run). */
export const psTable: ProcTable = async (pids) => {
  const select = pids ? ["-p", pids.join(",")] : ["-e"];
  const out = await new Deno.Command("ps", {
    args: [...select, "-o", "pid=", "-o", "ppid=", "-o", "pgid=", "-o", "args="],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  // ps exits 1 when a listed pid is gone: the rows it printed are still the answer.
  return parsePs(new TextDecoder().decode(out.stdout));
};

/** A launch tool's command line: npm (its title is `npm start`), npx, node, deno. */
const TOOL_RE = /^(?:\S*\/)?(?:npm|npx|node|nodejs|deno)(?:\s|$)/;
/** The script shell npm runs for `npm start`. */
const SCRIPT_SHELL_RE = /^(?:\S*\/)?(?:sh|bash|dash) -c (?:npx )?deno task(?:\s|$)/;

/** True for the command line of a launch tool or npm's script shell. */
export function isLauncher(args: string | undefined): boolean {
  return args !== undefined && (TOOL_RE.test(args) || SCRIPT_SHELL_RE.test(args));
}

/**
 * The launchers of process `self` in `rows`: its ancestors that are launch tools
 * ({@link isLauncher}), nearest first, up to the first that is not (and never pid 1).
 */
export function launchersOf(self: number, rows: readonly ProcRow[]): ProcRow[] {
  const byPid = new Map(rows.map((r) => [r.pid, r]));
  const me = byPid.get(self);
  if (!me) return [];
  const out: ProcRow[] = [];
  let next = byPid.get(me.ppid);
  while (next && next.pid > 1 && isLauncher(next.args) && out.length < 64) {
    out.push(next);
    next = byPid.get(next.ppid);
  }
  return out;
}

/**
 * A launcher that is gone already when the watch starts: the chain's top is npm's script shell,
 * handed to init (or to nobody in the table), so the npm that ran it has exited. Undefined when
 * the chain is whole. (A service manager that adopts orphans instead of init hides this case:
 * the watch then starts without npm, a window of one start-up.)
 */
export function orphaned(known: readonly ProcRow[], rows: readonly ProcRow[]): string | undefined {
  const top = known.at(-1);
  if (!top || !SCRIPT_SHELL_RE.test(top.args ?? "")) return undefined;
  const parent = rows.find((r) => r.pid === top.ppid);
  // Init adopted it, unless init is npm itself (a container's first process).
  return parent && (parent.pid > 1 || isLauncher(parent.args))
    ? undefined
    : `the process that started launcher ${top.pid} exited`;
}

/**
 * Which launcher is gone, as a message, or undefined when each is still there. A launcher below
 * the top whose parent changed was handed to init: that parent exited. The top's parent may
 * change: it is the shell or service that ran the command, not part of the stack.
 */
export function goneLauncher(
  known: readonly ProcRow[],
  now: readonly ProcRow[],
): string | undefined {
  const byPid = new Map(now.map((r) => [r.pid, r]));
  for (let i = 0; i < known.length; i++) {
    const p = known[i];
    const r = byPid.get(p.pid);
    if (!r) return `launcher process ${p.pid} exited`;
    if (i < known.length - 1 && r.ppid !== p.ppid) return `launcher process ${p.ppid} exited`;
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
 * the direct-parent watch. With a table, a parent that is not a launcher (a shell that ran
 * `deno run` itself) is not watched: the shell may exit while the stack runs on.
 */
export async function launcherGone(o: LauncherWatchOptions = {}): Promise<string> {
  const table = o.table ?? psTable;
  const ppid = o.ppid ?? (() => Deno.ppid);
  const parent = ppid();
  let known: ProcRow[] = [];
  let parentOnly = false;
  try {
    const rows = await table();
    known = launchersOf(o.pid ?? Deno.pid, rows);
    const early = orphaned(known, rows);
    if (early !== undefined) return early;
  } catch {
    parentOnly = true; // no ps: the parent alone
  }
  return await new Promise((resolve) => {
    let checking = false;
    const timer = setInterval(async () => {
      if (checking) return;
      checking = true;
      let gone = parentOnly && ppid() !== parent ? `parent process ${parent} exited` : undefined;
      if (gone === undefined && known.length > 0) {
        try {
          gone = goneLauncher(known, await table(known.map((p) => p.pid)));
        } catch {
          // ps went away: keep watching the parent
          known = [];
          parentOnly = true;
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
