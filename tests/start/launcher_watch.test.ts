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
} from "../../infra/launcher_watch.ts";
import { FakeTime } from "../helpers/fake_time.ts";

// shell (group 100) → npm (leader of 200) → sh → node → deno task → deno run (self, 205)
const SHELL: ProcRow = { pid: 100, ppid: 1, pgid: 100 };
const INIT: ProcRow = { pid: 1, ppid: 0, pgid: 1 };
const CHAIN: ProcRow[] = [
  { pid: 200, ppid: 100, pgid: 200 },
  { pid: 201, ppid: 200, pgid: 200 },
  { pid: 202, ppid: 201, pgid: 200 },
  { pid: 203, ppid: 202, pgid: 200 },
  { pid: 205, ppid: 203, pgid: 200 },
];
const TABLE = [INIT, SHELL, ...CHAIN];

Deno.test("launcher watch: ps output, the launchers of a job, and which one is gone", () => {
  assert.deepEqual(parsePs("  200   100   200\n 201 200 200\nbad line\n\n"), [
    { pid: 200, ppid: 100, pgid: 200 },
    { pid: 201, ppid: 200, pgid: 200 },
  ]);
  const known = launchersOf(205, TABLE);
  // Nearest first, up to the job's leader; the shell is another group.
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
  // Gone before the watch began: the chain's top is not its group's leader, its parent init.
  const early = launchersOf(205, killed);
  assert.deepEqual(early.map((p) => p.pid), [203, 202, 201]);
  assert.match(orphaned(early, killed)!, /started launcher 201 exited/);
  // npm as pid 1 (a container): the chain is whole.
  const container = [
    { pid: 1, ppid: 0, pgid: 1 },
    { pid: 7, ppid: 1, pgid: 1 },
    { pid: 8, ppid: 7, pgid: 1 },
  ];
  const inContainer = launchersOf(8, container);
  assert.deepEqual(inContainer.map((p) => p.pid), [7]);
  assert.equal(orphaned(inContainer, container), undefined);
  assert.deepEqual(launchersOf(999, TABLE), []);
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
