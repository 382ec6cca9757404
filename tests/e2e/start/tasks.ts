/** Run a deno.json task's exact command line as a real process (tests of the tasks' output). */
import assert from "node:assert/strict";
import { join } from "node:path";
import { E2E_TOKEN, Proc, ROOT } from "../procs.ts";

/**
 * A task's command line from deno.json, without the leading `deno`. The one shell construct the
 * tasks use, `$(test -n "$VAR" && echo WORDS)` (flags for a variable that is set), is expanded
 * as `deno task` would with `env`.
 */
export async function taskArgs(task: string, env: Record<string, string> = {}): Promise<string[]> {
  const cfg = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  const command = String(cfg.tasks[task].command).replace(
    /\$\(test -n "\$(\w+)" && echo ([^)]*)\)/g,
    (_, name: string, words: string) => env[name] ? words.replaceAll(`$${name}`, env[name]) : "",
  );
  const words = command.trim().split(/\s+/);
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

/**
 * Three routers (A, B, C) started as `deno task router` on `env`, one after the other; each is
 * added to `procs` as it starts, so the caller's cleanup stops those that did.
 */
export async function startThreeTaskRouters(
  env: Record<string, string>,
  procs: Proc[],
): Promise<{ proc: Proc; url: string }[]> {
  const routers = [];
  for (const name of ["router-a", "router-b", "router-c"]) {
    const r = await startTaskRouter(name, env);
    procs.push(r.proc);
    routers.push(r);
  }
  return routers;
}

/** A router started with exactly `deno task router`'s command line (its KV-path grants). */
export async function startTaskRouter(
  name: string,
  env: Record<string, string>,
): Promise<{ proc: Proc; url: string }> {
  const proc = new Proc(name, await taskArgs("router", env), {
    SVC_HOST: "127.0.0.1",
    SVC_PORT: "0",
    SVC_WORKER_TOKEN: E2E_TOKEN,
    ...env,
  });
  try {
    const m = await proc.waitForLine(/router listening .*port=(\d+)/);
    return { proc, url: `http://127.0.0.1:${m[1]}` };
  } catch (err) {
    await proc.kill();
    throw err;
  }
}
