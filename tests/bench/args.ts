/**
 * Command line of `deno task bench`: `--quick`, `--out DIR`, `--write-docs`, `--no-router`,
 * `--worker PATH`.
 */
import { parseArgs as parseNodeArgs } from "node:util";

/** Parsed options. */
export interface BenchArgs {
  quick: boolean;
  /** Directory receiving results.json and chart.svg; null means bench/results (untracked). */
  outDir: string | null;
  /** Write the committed copy in docs/bench instead of bench/results (when no --out). */
  writeDocs: boolean;
  /** Skip the router scenarios even when the router starts. */
  router: boolean;
  /** Worker entry point relative to the repository, to measure a modified copy (A/B). */
  workerEntry: string;
}

const USAGE =
  "usage: npx deno task bench [--quick] [--out DIR | --write-docs] [--no-router] [--worker PATH]";

/** `deno task bench --help`. */
export const BENCH_HELP = `${USAGE}

Measures the worker (and the router) against onnxruntime-node in-process on fixture/bench-small,
in interleaved rounds; about 4-5 minutes (--quick: under one). Run it on a quiet machine.
  --quick        fewer rounds and sizes
  --out DIR      write results.json and chart.svg there (default: bench/results, untracked)
  --write-docs   refresh the committed copy in docs/bench instead
  --no-router    skip the router scenarios
  --worker PATH  measure another worker entry point (A/B)`;

/** Parse the arguments; throws with a usage line on anything unknown. */
export function parseArgs(argv: readonly string[]): BenchArgs {
  let values;
  try {
    ({ values } = parseNodeArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        quick: { type: "boolean", default: false },
        "no-router": { type: "boolean", default: false },
        "write-docs": { type: "boolean", default: false },
        out: { type: "string" },
        worker: { type: "string", default: "worker/main.ts" },
      },
    }));
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${USAGE}`);
  }
  return {
    quick: values.quick,
    outDir: values.out ?? null,
    writeDocs: values["write-docs"],
    router: !values["no-router"],
    workerEntry: values.worker,
  };
}
