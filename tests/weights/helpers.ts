/** Shared helpers of the weight tests: temp dirs, tiny repo files, deadlines, spy sources. */
import { dirname, join } from "node:path";
import type { WeightFileRef, WeightSource } from "#worker/weights/types.ts";

/** Deterministic pseudo-random bytes (xorshift), so each file has distinct, checkable content. */
export function bytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/** Writes `files` (path → bytes) of `repo` under `root` in the `<org>/<name>/<path>` layout. */
export async function writeRepo(
  root: string,
  repo: string,
  files: Record<string, Uint8Array>,
): Promise<void> {
  for (const [path, data] of Object.entries(files)) {
    const full = join(root, ...repo.split("/"), ...path.split("/"));
    await Deno.mkdir(dirname(full), { recursive: true });
    await Deno.writeFile(full, data);
  }
}

/** Writes `files` of `repo` at `revision` into a local cache (`<org>/<name>/@<revision>/<path>`). */
export function writeCached(
  cacheDir: string,
  repo: string,
  revision: string,
  files: Record<string, Uint8Array>,
): Promise<void> {
  return writeRepo(cacheDir, `${repo}/@${revision}`, files);
}

/** The tiny model most tests use: three files of a few KB in two folders. */
export function tinyModel(seed = 1): Record<string, Uint8Array> {
  return {
    "onnx/model.onnx": bytes(6000, seed),
    "tokenizer.json": bytes(2500, seed + 1),
    "config.json": bytes(300, seed + 2),
  };
}

/** Roles → paths for {@link tinyModel}. */
export const TINY_FILES: Record<string, string> = {
  model: "onnx/model.onnx",
  tokenizer: "tokenizer.json",
  config: "config.json",
};

/** Runs `fn` with a fresh temp dir, always removed afterwards. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "weights-test-" });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Rejects if `promise` has not settled within `ms` (keeps a broken test from hanging CI). */
export async function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let id: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    id = setTimeout(() => reject(new Error(`test step exceeded ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(id);
  }
}

/** Files in `dir` (recursively) whose name marks an unfinished download. */
export async function partialFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for await (const e of Deno.readDir(d)) {
      if (e.isDirectory) await walk(join(d, e.name));
      else if (e.name.includes(".partial-")) out.push(join(d, e.name));
    }
  };
  await walk(dir).catch(() => {});
  return out;
}

/** A source that records its calls and never has anything (proves the cache answered). */
export function spySource(name = "spy"): WeightSource & { calls: WeightFileRef[] } {
  const calls: WeightFileRef[] = [];
  return {
    name,
    calls,
    fetchTo(ref: WeightFileRef): Promise<boolean> {
      calls.push(ref);
      return Promise.resolve(false);
    },
  };
}

/** Full-file GETs (no Range) the fake hub saw for paths ending with `suffix`. */
export function fullGets(
  requests: { method: string; path: string; range?: string }[],
  suffix: string,
): number {
  return requests.filter((r) => r.method === "GET" && !r.range && r.path.endsWith(suffix)).length;
}
