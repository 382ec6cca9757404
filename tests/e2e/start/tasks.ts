/** Run a deno.json task's exact command line as a real process (tests of the tasks' output). */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../procs.ts";

/** A task's command line from deno.json, without the leading `deno`. */
export async function taskArgs(task: string): Promise<string[]> {
  const cfg = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  const words = String(cfg.tasks[task].command).split(/\s+/);
  assert.equal(words[0], "deno");
  return words.slice(1);
}

/** What a finished task printed. */
export interface TaskRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `deno task <task> <args>` to completion (bounded: killed after `ms`). */
export async function runTask(
  task: string,
  args: string[],
  env: Record<string, string> = {},
  ms = 60_000,
): Promise<TaskRun> {
  const cmd = new Deno.Command(Deno.execPath(), {
    args: [...await taskArgs(task), ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1", SVC_API_KEYS: "", SVC_ROUTER_URL: "", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(ms),
  });
  const out = await cmd.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}
