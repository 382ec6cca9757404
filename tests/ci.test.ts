/**
 * The test tiers (tests/ci.ts): each test runs in exactly one step, and the unit tier is what its
 * name says: in-process, no subprocess, no network past 127.0.0.1.
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { E2E_DIR, parseArgs, phases, ROUTER_DIR, steps } from "./ci.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** Every test file under tests/, relative to the repository root (tests/.tmp skipped). */
async function testFiles(dir = join(ROOT, "tests"), out: string[] = []): Promise<string[]> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory && e.name !== ".tmp" && e.name !== "node_modules") {
      await testFiles(path, out);
    } else if (e.isFile && e.name.endsWith(".test.ts")) out.push(relative(ROOT, path));
  }
  return out.sort();
}

/** The `deno test` or `deno task test:*` steps of a run, with the folders each one covers. */
function testSteps(args: string[][]): string[][] {
  return args.filter((a) => a[0] === "test" || (a[0] === "task" && a[1].startsWith("test:")));
}

Deno.test("tiers: npm test runs the unit tier's checks and tests, then the e2e tier", () => {
  const all = steps(["unit", "e2e"], []);
  assert.deepEqual(all.slice(0, 3), [["fmt", "--check"], ["lint"], ["task", "check"]]);
  assert.deepEqual(all[3], ["task", "test:router"]);
  const unit = all[4];
  assert.deepEqual(unit.slice(0, 2), ["test", "-P=unit"]);
  assert.equal(unit.at(-1), "tests/");
  // The router's tests run once, with the router's permissions: the unit run leaves them out.
  assert.ok(unit.includes(`--ignore=${E2E_DIR},${ROUTER_DIR}`), unit.join(" "));
  assert.deepEqual(all[5], ["test", "-P=tests", "--no-check", "--parallel", E2E_DIR]);
  assert.equal(all.length, 6);
  assert.deepEqual(steps(["unit"], []), all.slice(0, 5));
  assert.deepEqual(steps(["e2e"], []), all.slice(5));
});

Deno.test("tiers: format and lint first; then the type check and both test runs at once", () => {
  const unit = phases(["unit"], []);
  assert.deepEqual(unit.slice(0, 2), [[["fmt", "--check"]], [["lint"]]]);
  assert.equal(unit.length, 3);
  assert.deepEqual(unit[2].map((s) => s.slice(0, 2)), [
    ["task", "check"],
    ["task", "test:router"],
    ["test", "-P=unit"],
  ]);
  assert.deepEqual(phases(["unit", "e2e"], []).flat(), steps(["unit", "e2e"], []));
});

Deno.test("tiers: the first argument picks a tier; the others reach every test run", () => {
  assert.deepEqual(parseArgs([]), { tiers: ["unit", "e2e"], extra: [] });
  assert.deepEqual(parseArgs(["unit", "--filter", "x"]), {
    tiers: ["unit"],
    extra: ["--filter", "x"],
  });
  assert.deepEqual(parseArgs(["--filter", "e2e"]), {
    tiers: ["unit", "e2e"],
    extra: ["--filter", "e2e"],
  });
  const runs = testSteps(steps(["unit", "e2e"], ["--filter", "x"]));
  assert.equal(runs.length, 3);
  for (const run of runs) assert.ok(run.join(" ").includes("--filter x"), run.join(" "));
  // Paths stay last, after the arguments, so that deno test reads them as paths.
  assert.equal(runs[1].at(-1), "tests/");
  assert.equal(runs[2].at(-1), E2E_DIR);
});

Deno.test("tiers: the unit permission set starts no process and reaches 127.0.0.1 only", async () => {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  const unit = config.permissions.unit;
  assert.ok(unit, "deno.json has a unit permission set");
  assert.equal(unit.run, undefined, "no subprocess");
  assert.deepEqual(unit.net, ["127.0.0.1"]);
  assert.equal(unit.import, undefined);
  const router = config.tasks["test:router"].command as string;
  assert.match(router, /^deno test -P=router /);
  assert.ok(router.endsWith(` ${ROUTER_DIR}`), router);
  assert.deepEqual(config.permissions.router, { net: true, env: true });
});

Deno.test("tiers: no test outside tests/e2e/ starts a process itself", async () => {
  const files = await testFiles();
  assert.ok(files.some((f) => f.startsWith(E2E_DIR)) && files.length > 100, "found the tests");
  // The unit tier's permissions refuse a subprocess at run time; a test that catches the refusal
  // (to skip where a tool is missing) would pass there without testing anything, so the source is
  // checked too.
  const spawning: string[] = [];
  const self = relative(ROOT, fileURLToPath(import.meta.url)); // names the patterns, spawns nothing
  for (const f of files.filter((f) => !f.startsWith(E2E_DIR) && f !== self)) {
    const text = await Deno.readTextFile(join(ROOT, f));
    if (/new Deno\.Command\b|node:child_process|playwright/.test(text)) spawning.push(f);
  }
  assert.deepEqual(spawning, [], `start processes: move them to ${E2E_DIR}<area>/`);
});
