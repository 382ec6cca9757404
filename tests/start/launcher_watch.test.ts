/**
 * The launcher watch of `deno task start`, on process tables given by the test (the real `ps`:
 * tests/e2e/start/launcher_watch.test.ts).
 */
import assert from "node:assert/strict";
import {
  goneLauncher,
  launcherGone,
  launchersOf,
  orphaned,
  parsePs,
  type ProcRow,
} from "#infra/launcher_watch.ts";
import { FakeTime } from "../helpers/fake_time.ts";

// shell (group 100) → npm (leader of 200) → sh → node → deno task → deno run (self, 205)
const SHELL: ProcRow = { pid: 100, ppid: 1, pgid: 100, args: "-bash" };
const INIT: ProcRow = { pid: 1, ppid: 0, pgid: 1, args: "/sbin/init" };
const CHAIN: ProcRow[] = [
  { pid: 200, ppid: 100, pgid: 200, args: "npm start" },
  { pid: 201, ppid: 200, pgid: 200, args: "sh -c deno task start" },
  { pid: 202, ppid: 201, pgid: 200, args: "node /app/node_modules/.bin/deno task start" },
  { pid: 203, ppid: 202, pgid: 200, args: "/app/node_modules/deno/deno task start" },
  { pid: 205, ppid: 203, pgid: 200, args: "/app/node_modules/deno/deno run -P=start x.ts" },
];
const TABLE = [INIT, SHELL, ...CHAIN];

Deno.test("launcher watch: ps output, the launchers of a job, and which one is gone", () => {
  assert.deepEqual(parsePs("  200   100   200 npm start\n 201 200 200\nbad line\n\n"), [
    { pid: 200, ppid: 100, pgid: 200, args: "npm start" },
    { pid: 201, ppid: 200, pgid: 200 },
  ]);
  const known = launchersOf(205, TABLE);
  // Nearest first, up to npm; the shell is not a launcher.
  assert.deepEqual(known.map((p) => p.pid), [203, 202, 201, 200]);
  assert.equal(goneLauncher(known, TABLE), undefined);
  assert.equal(orphaned(known, TABLE), undefined);
  // npm killed: sh is handed to init.
  const killed = [INIT, SHELL, { ...CHAIN[1], ppid: 1 }, ...CHAIN.slice(2)];
  assert.equal(goneLauncher(known, killed), "launcher process 200 exited");
  // npm and sh gone.
  assert.equal(
    goneLauncher(known, [INIT, SHELL, ...CHAIN.slice(2)]),
    "launcher process 201 exited",
  );
  // The shell that ran `nohup npm start &` exited: npm is handed to init, the stack runs on.
  assert.equal(goneLauncher(known, [INIT, { ...CHAIN[0], ppid: 1 }, ...CHAIN.slice(1)]), undefined);
  // Gone before the watch began: the chain's top is npm's script shell, its parent init.
  const early = launchersOf(205, killed);
  assert.deepEqual(early.map((p) => p.pid), [203, 202, 201]);
  assert.match(orphaned(early, killed)!, /started launcher 201 exited/);
  // npm as pid 1 (a container): the chain is whole.
  const container = [
    { pid: 1, ppid: 0, pgid: 1, args: "npm start" },
    { pid: 7, ppid: 1, pgid: 1, args: "sh -c deno task start" },
    { pid: 8, ppid: 7, pgid: 1, args: "deno task start" },
    { pid: 9, ppid: 8, pgid: 1, args: "deno run x.ts" },
  ];
  const inContainer = launchersOf(9, container);
  assert.deepEqual(inContainer.map((p) => p.pid), [8, 7]);
  assert.equal(orphaned(inContainer, container), undefined);
  assert.deepEqual(launchersOf(999, TABLE), []);
  // `deno run` straight from a shell: nothing to watch (the shell may exit; Ctrl-C still works).
  assert.deepEqual(launchersOf(205, [SHELL, { ...CHAIN[4], ppid: 100 }]), []);
  // A backgrounded shell without job control (one process group) is not a launcher either.
  const noJobControl = [
    { pid: 50, ppid: 1, pgid: 50, args: "bash -c npm start > log 2>&1 &" },
    { ...CHAIN[0], ppid: 50, pgid: 50 },
    ...CHAIN.slice(1).map((r) => ({ ...r, pgid: 50 })),
  ];
  assert.deepEqual(launchersOf(205, noJobControl).map((p) => p.pid), [203, 202, 201, 200]);
});

Deno.test("launcher watch: resolves once a launcher goes; a table that fails leaves the parent watch", async () => {
  using time = new FakeTime();
  let rows = TABLE;
  const gone = launcherGone({
    intervalMs: 5,
    pid: 205,
    ppid: () => 203,
    table: () => Promise.resolve(rows),
  });
  let settled = false;
  gone.then(() => settled = true);
  await time.tick(30); // six checks, every launcher still there
  assert.equal(settled, false);
  rows = [INIT, SHELL, { ...CHAIN[1], ppid: 1 }, ...CHAIN.slice(2)];
  await time.tick(5);
  assert.equal(settled, true);
  assert.equal(await gone, "launcher process 200 exited");

  let parent = 203;
  const parentOnly = launcherGone({
    intervalMs: 5,
    pid: 205,
    ppid: () => parent,
    table: () => Promise.reject(new Error("no ps")),
  });
  parent = 1;
  await time.tick(5);
  assert.equal(await parentOnly, "parent process 203 exited");
  assert.equal(time.pendingTimers, 0, "each watch stopped its timer");
});
