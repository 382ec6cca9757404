/** Command line of `deno task bench`: `--quick`, `--out DIR`, `--no-router`, `--worker PATH`. */

/** Parsed options. */
export interface BenchArgs {
  quick: boolean;
  /** Directory receiving results.json and chart.svg; null means the repository's docs/bench. */
  outDir: string | null;
  /** Skip the router scenarios even when the router starts. */
  router: boolean;
  /** Worker entry point relative to the repository, to measure a modified copy (A/B). */
  workerEntry: string;
}

/** Parse the arguments; throws with a usage line on anything unknown. */
export function parseArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = {
    quick: false,
    outDir: null,
    router: true,
    workerEntry: "worker/main.ts",
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--quick") args.quick = true;
    else if (a === "--no-router") args.router = false;
    else if (a === "--out" && i + 1 < argv.length) args.outDir = argv[++i];
    else if (a.startsWith("--out=")) args.outDir = a.slice("--out=".length);
    else if (a === "--worker" && i + 1 < argv.length) args.workerEntry = argv[++i];
    else {throw new Error(
        `unknown argument '${a}'\nusage: deno task bench [--quick] [--out DIR] [--no-router] [--worker PATH]`,
      );}
  }
  return args;
}
