/**
 * Every task of deno.json answers `deno task X --help` with its usage and exit code 0, run
 * through the real task runner (which appends the arguments to the task's command): none starts
 * a server, a benchmark or the test suite instead, and none ends in a stack trace.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../procs.ts";

/** Tasks whose command is a deno subcommand: their usage is deno's own for it. */
const DENO_SUBCOMMANDS = /^deno (check|test|fmt|lint) /;

Deno.test({
  name: "tasks: every deno task X --help exits 0 with its usage",
  fn: async () => {
    const cfg = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
    const tasks = Object.entries(cfg.tasks as Record<string, string | { command: string }>);
    assert.ok(tasks.length >= 15, "deno.json lists the tasks");
    const failures: string[] = [];
    // Three at a time: each is a deno process that loads its module graph.
    const queue = [...tasks];
    const runOne = async () => {
      for (let t = queue.shift(); t; t = queue.shift()) {
        const [name, task] = t;
        const command = typeof task === "string" ? task : task.command;
        const out = await new Deno.Command(Deno.execPath(), {
          args: ["task", name, "--help"],
          cwd: ROOT,
          // No server may start: a port in use would show one that tried.
          env: { NO_COLOR: "1", SVC_PORT: "9", SVC_API_KEYS: "" },
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
          signal: AbortSignal.timeout(90_000),
        }).output();
        const stdout = new TextDecoder().decode(out.stdout);
        const stderr = new TextDecoder().decode(out.stderr);
        const usage = DENO_SUBCOMMANDS.test(command) ? /Usage: deno /i : /^usage: /m;
        if (out.code !== 0 || !usage.test(stdout) || /^\s+at /m.test(stderr)) {
          failures.push(
            `deno task ${name} --help: exit ${out.code}\n${stdout.slice(0, 400)}\n${
              stderr.slice(0, 600)
            }`,
          );
        }
      }
    };
    await Promise.all([runOne(), runOne(), runOne()]);
    assert.deepEqual(failures, [], failures.join("\n---\n"));
  },
});
