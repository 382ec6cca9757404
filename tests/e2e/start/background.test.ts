/**
 * Issue 35.6: `nohup npm start > log 2>&1 &` (the README's background form) keeps running once
 * the shell that started it has exited, and SIGTERM to npm still stops the whole stack (no
 * orphan holding the port). The shell is a non-interactive bash: one process group with npm,
 * the case the old watch took for a launcher.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../procs.ts";
import { firstRunEnv } from "./stack.ts";
import { waitFor } from "../../helpers/wait.ts";
import { psTable } from "#infra/launcher_watch.ts";

/** A port nobody listens on right now (the stack binds it a moment later). */
function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Status of a GET, or 0 when nothing answers. */
async function statusOf(url: string): Promise<number> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    await res.body?.cancel();
    return res.status;
  } catch {
    return 0;
  }
}

/** `root` and every process below it (to clean up whatever the test left). */
async function descendants(root: number): Promise<number[]> {
  const rows = await psTable();
  const out = [root];
  for (let i = 0; i < out.length; i++) {
    for (const r of rows) if (r.ppid === out[i]) out.push(r.pid);
  }
  return out;
}

Deno.test({
  name: "npm start in the background outlives its shell; SIGTERM to npm still stops it",
  fn: async () => {
    const xdg = await Deno.makeTempDir({ prefix: "svc-npm-bg-" });
    const port = freePort();
    const base = `http://127.0.0.1:${port}`;
    const log = join(xdg, "svc.log");
    let npm = 0;
    let tree: number[] = [];
    try {
      const shell = await new Deno.Command("bash", {
        args: ["-c", `nohup npm start > "${log}" 2>&1 & echo $!`],
        cwd: ROOT,
        env: { NO_COLOR: "1", ...firstRunEnv(xdg, { SVC_PORT: String(port) }) },
        stdin: "null",
        stdout: "piped",
      }).output();
      // The shell has exited here; npm was started under it.
      npm = Number(new TextDecoder().decode(shell.stdout).trim());
      assert.ok(npm > 1, "the shell printed npm's pid");
      const tail = async () => await Deno.readTextFile(log).catch(() => "(no log)");
      await waitFor(async () => await statusOf(`${base}/readyz`) === 200, "/readyz 200", {
        timeoutMs: 120_000,
        everyMs: 100,
      }).catch(async (err) => {
        throw new Error(`${(err as Error).message}\n${await tail()}`);
      });
      tree = await descendants(npm);
      // Several rounds of the watch (once a second) after the shell exited: still serving.
      await new Promise((r) => setTimeout(r, 3000));
      assert.equal(await statusOf(`${base}/readyz`), 200, await tail());
      assert.doesNotMatch(await tail(), /stopping the stack/);

      Deno.kill(npm, "SIGTERM");
      await waitFor(async () => await statusOf(`${base}/healthz`) === 0, "router port closed", {
        timeoutMs: 30_000,
        everyMs: 100,
      });
      assert.match(await tail(), /start: launcher process \d+ exited; stopping the stack/);
      // No process of the stack is left.
      await waitFor(
        async () => {
          const alive = new Set((await psTable(tree)).map((r) => r.pid));
          return tree.every((p) => !alive.has(p));
        },
        "every process of the stack gone",
        { timeoutMs: 15_000, everyMs: 200 },
      );
    } finally {
      for (const pid of tree.length > 0 ? tree : npm > 1 ? [npm] : []) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      await Deno.remove(xdg, { recursive: true });
    }
  },
});
