/**
 * docs/fleet.md's "Running a fleet" recipe, run as written (parsed from the page): the fixtures
 * command, a router and a separate worker process started with exactly the recipe's variables and
 * task commands, then its curl with a profile, with no model hub. What the test changes, and why:
 * `$HOME` is a fresh directory; the ports are free ones (the router's `8080`, wherever the recipe
 * names it, becomes the port it bound); both bind 127.0.0.1; the hub is a closed port.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Proc, ROOT } from "../procs.ts";
import { curlExamples, recipe, type ShellCommand } from "./readme_examples.ts";
import { runTask, taskArgs } from "./tasks.ts";
import { waitFor } from "../../helpers/wait.ts";

/** `npx deno task NAME ARGS…` → [NAME, ARGS]. */
function taskOf(c: ShellCommand): [string, string[]] {
  assert.deepEqual(c.argv.slice(0, 3), ["npx", "deno", "task"], c.argv.join(" "));
  return [c.argv[3], c.argv.slice(4)];
}

Deno.test({
  name: "fleet recipe: docs/fleet.md's router + worker + curl run as written, offline",
  fn: async () => {
    const page = await Deno.readTextFile(join(ROOT, "docs", "fleet.md"));
    const { text, commands } = recipe(page, "Running a fleet");
    const tasks = commands.filter((c) => c.argv[0] === "npx");
    assert.deepEqual(tasks.map((c) => taskOf(c)[0]), ["fixtures", "router", "worker"]);
    const [fixtures, routerCmd, workerCmd] = tasks;
    const curls = curlExamples("```sh\n" + text + "\n```\n");
    assert.equal(curls.length, 1, "one curl");

    const home = await Deno.makeTempDir({ prefix: "svc-fleet-recipe-" });
    const sub = (v: string, routerUrl = "") =>
      v.replaceAll("$HOME", home).replaceAll("http://127.0.0.1:8080", routerUrl);
    // What every process gets besides the recipe's variables (see the module comment).
    const base = {
      HOME: home,
      XDG_CACHE_HOME: "",
      SVC_HOST: "127.0.0.1",
      SVC_HUB_URL: "http://127.0.0.1:9",
    };
    const procs: Proc[] = [];
    try {
      const [fxTask, fxArgs] = taskOf(fixtures);
      const fx = await runTask(fxTask, fxArgs.map((a) => sub(a)), base, 120_000);
      assert.equal(fx.code, 0, fx.stderr);

      const [rTask] = taskOf(routerCmd);
      assert.equal(routerCmd.env.SVC_PORT, "8080");
      const routerEnv = { ...base, ...routerCmd.env, SVC_PORT: "0" };
      const router = new Proc("recipe-router", await taskArgs(rTask), routerEnv);
      procs.push(router);
      const port = (await router.waitForLine(/router listening .*port=(\d+)/, 30_000))[1];
      const url = `http://127.0.0.1:${port}`;

      const [wTask] = taskOf(workerCmd);
      assert.equal(workerCmd.env.SVC_ROUTER_URL, "http://127.0.0.1:8080");
      const workerEnv: Record<string, string> = { ...base, SVC_PORT: "0" };
      for (const [k, v] of Object.entries(workerCmd.env)) {
        if (k !== "SVC_PORT") workerEnv[k] = sub(v, url);
      }
      const worker = new Proc("recipe-worker", await taskArgs(wTask), workerEnv);
      procs.push(worker);
      await waitFor(
        async () => {
          const h = await (await fetch(`${url}/health`)).json();
          return (h.workers as { pool: string }[]).some((w) => w.pool === "cpu");
        },
        "the worker registered in pool cpu",
        { timeoutMs: 60_000, proc: watch(worker) },
      );

      // The recipe's curl, as written (host and port aside).
      const [ex] = curls;
      const res = await fetch(url + ex.path, {
        method: ex.method,
        headers: ex.headers,
        body: ex.body,
        signal: AbortSignal.timeout(60_000),
      });
      const body = await res.text();
      assert.equal(res.status, 200, body);
      assert.equal(JSON.parse(body).items[0].dense.dims, 32);

      // What the bullets below it say: l4 is accepted and waits for a worker (202); without a
      // profile header the 400 names the header and the setting.
      const l4 = await fetch(url + ex.path, {
        method: "POST",
        headers: { ...ex.headers, "x-svc-machine-profile": "l4" },
        body: ex.body,
      });
      assert.equal(l4.status, 202, await l4.text());
      const bare = { ...ex.headers };
      delete bare["x-svc-machine-profile"];
      const none = await fetch(url + ex.path, { method: "POST", headers: bare, body: ex.body });
      assert.equal(none.status, 400);
      assert.match((await none.json()).detail.message, /SVC_DEFAULT_MACHINE_PROFILE/);
    } finally {
      for (const p of procs.reverse()) await p.stop(10_000).catch(() => {});
      await Deno.remove(home, { recursive: true });
    }
  },
});

/** The wait ends at once, with the output, if the process exits. */
function watch(proc: Proc) {
  let done = false;
  proc.status.then(() => done = true);
  return { running: () => !done, tail: () => proc.tail() };
}
