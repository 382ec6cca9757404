/**
 * `deno task test` (and `npm test`): everything CI runs, in order, stopping at the first failure.
 * A script rather than a `&&` chain in deno.json because `deno task` appends its arguments to the
 * last command of a chain: `deno task test --help` would run the whole suite before printing any
 * help. Arguments other than --help go to the last step (`deno test`), e.g. `--filter NAME`.
 */

const HELP = `usage: npm test [-- ARGS]   (or: npx deno task test [ARGS])

Everything CI runs, stopping at the first failure:
  1. deno fmt --check
  2. deno lint
  3. deno task check         type check of every member (shared/ client/ onnx/
                             fixture_models/ router/ worker/), infra/ and tests/
  4. deno task test:router   router unit tests with network and env permissions only
  5. deno task test:all      every test (deno test --parallel tests/), with ARGS appended
About 2.5 minutes on 2 cores. Tests start servers on 127.0.0.1 only and download no model.`;

/** The steps, as arguments of the deno binary. */
export function steps(extra: readonly string[]): string[][] {
  return [
    ["fmt", "--check"],
    ["lint"],
    ["task", "check"],
    ["task", "test:router"],
    ["task", "test:all", ...extra],
  ];
}

if (import.meta.main) {
  if (Deno.args.includes("--help") || Deno.args.includes("-h")) {
    console.log(HELP);
    Deno.exit(0);
  }
  for (const args of steps(Deno.args)) {
    const { code } = await new Deno.Command(Deno.execPath(), {
      args,
      cwd: new URL("../", import.meta.url).pathname,
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (code !== 0) Deno.exit(code);
  }
}
