/** Child processes of the bench: spawn `deno run`, keep the tail of their output, always kill. */
import { fileURLToPath } from "node:url";

/** Repository root (commands run from there so `-P=<set>` finds deno.json). */
export const REPO: string = fileURLToPath(new URL("../../", import.meta.url));

/** The `--v8-flags` of `deno task router` (deno.json): the flags the router is deployed with. */
export async function routerV8Flags(): Promise<string> {
  const config = JSON.parse(await Deno.readTextFile(`${REPO}deno.json`));
  const command: string = config.tasks.router.command;
  return command.match(/--v8-flags=(\S+)/)?.[1] ?? "";
}

/** Output kept per process for error messages (the tail is what explains a crash). */
const TAIL_CHARS = 8000;

/** Processes started and not yet reaped, for `killAll` on an interrupt. */
const live = new Set<Proc>();

/** A spawned process. */
export interface Proc {
  child: Deno.ChildProcess;
  /** Last few kilobytes of stdout+stderr (empty when stdout is taken by the caller). */
  tail(): string;
  /** Resolves when the process has exited. */
  exited: Promise<Deno.CommandStatus>;
  /** False once the process has exited. */
  running(): boolean;
  /** SIGKILL if still running and wait for the exit; never throws. */
  kill(): Promise<void>;
}

/** Spawn `deno run <args>` in the repository; `pipeStdio` hands stdin/stdout to the caller. */
export function spawnDeno(
  args: string[],
  env: Record<string, string>,
  pipeStdio = false,
): Proc {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...args],
    cwd: REPO,
    env: { NO_COLOR: "1", ...env },
    stdin: pipeStdio ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let tail = "";
  const keep = async (stream: ReadableStream<Uint8Array>) => {
    const dec = new TextDecoder();
    for await (const chunk of stream) tail = (tail + dec.decode(chunk)).slice(-TAIL_CHARS);
  };
  const pumps = [keep(child.stderr)];
  if (!pipeStdio) pumps.push(keep(child.stdout));
  let done = false;
  const exited = child.status.then((s) => {
    done = true;
    live.delete(proc);
    return s;
  });
  const proc: Proc = {
    child,
    tail: () => tail,
    exited,
    running: () => !done,
    async kill() {
      if (!done) {
        try {
          child.kill("SIGKILL");
        } catch {
          // It exited in between.
        }
      }
      await exited;
      await Promise.allSettled(pumps);
    },
  };
  live.add(proc);
  return proc;
}

/** Kill every process still running (Ctrl-C or SIGTERM skips the callers' `finally` blocks). */
export async function killAll(): Promise<void> {
  await Promise.all([...live].map((p) => p.kill()));
}

/** A free TCP port on 127.0.0.1 (bind to 0, read it, release it; the race is harmless here). */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}
