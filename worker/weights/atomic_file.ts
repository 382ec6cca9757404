/**
 * Atomic file writes: bytes go to `<dest>.partial-<random>` and are renamed onto `dest` only
 * when complete, so a crash or error never leaves a half file at the final path.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";

/** Default time (ms) a download may go without receiving a byte before it is abandoned. */
export const DEFAULT_IDLE_TIMEOUT_MS = 60_000;

const PARTIAL_MARK = ".partial-";

/** Options of {@link writeStreamAtomic}. */
export interface AtomicWriteOptions {
  signal?: AbortSignal;
  /** Abandon the write when no chunk arrives for this long. */
  idleTimeoutMs?: number;
  /**
   * When known (Content-Length, hub metadata), a size mismatch fails the write: a longer body as
   * soon as it passes the size, a shorter one at its end.
   */
  expectedBytes?: number;
  /**
   * Most bytes accepted (like `curl --max-filesize`): the write fails with FileTooLargeError as
   * soon as the body passes it, however much the source goes on sending, and at most this many
   * bytes ever reach the disk.
   */
  maxBytes?: number;
  /** When the source states the content's hash, a mismatch fails the write before the rename. */
  digest?: ExpectedDigest;
}

/** A hash the bytes must have: `hash(prefix + bytes)` in lower-case hex. */
export interface ExpectedDigest {
  algorithm: "sha256" | "sha1";
  /** Hashed before the bytes (git blob ids hash `blob <size>\0` first). */
  prefix?: string;
  hex: string;
}

/** Error raised when a download's bytes do not have the hash their source stated. */
export class DigestMismatchError extends Error {
  constructor(d: ExpectedDigest, got: string) {
    super(`corrupt download: ${d.algorithm} ${got}, the source stated ${d.hex}`);
    this.name = "DigestMismatchError";
  }
}

/** Error raised when a body passes the write's `maxBytes`; `received` counts the bytes read. */
export class FileTooLargeError extends Error {
  constructor(readonly maxBytes: number, readonly received: number) {
    super(`more than ${maxBytes} bytes (stopped after ${received})`);
    this.name = "FileTooLargeError";
  }
}

/** Error raised when a stream stops delivering data for longer than the idle timeout. */
export class StalledDownloadError extends Error {
  constructor(ms: number) {
    super(`download stalled: no data for ${ms} ms`);
    this.name = "TimeoutError";
  }
}

/** True for names written by {@link writeStreamAtomic} that were never renamed. */
export function isPartialName(name: string): boolean {
  return name.includes(PARTIAL_MARK);
}

/** Streams `stream` into `dest` atomically; returns the number of bytes written. */
export async function writeStreamAtomic(
  dest: string,
  stream: ReadableStream<Uint8Array>,
  opts: AtomicWriteOptions = {},
): Promise<number> {
  const partial = `${dest}${PARTIAL_MARK}${randomSuffix()}`;
  const reader = stream.getReader();
  let file: Deno.FsFile | undefined;
  try {
    // createNew: never clobber another writer's partial, however unlikely the name clash.
    file = await Deno.open(partial, { write: true, createNew: true });
    const hash = opts.digest ? createHash(opts.digest.algorithm) : undefined;
    if (opts.digest?.prefix) hash!.update(opts.digest.prefix);
    let written = 0;
    for (;;) {
      const { done, value } = await readWithDeadline(reader, opts);
      if (done) break;
      const total = written + value.byteLength;
      // Checked before the chunk is written: nothing past a bound ever reaches the disk.
      if (opts.maxBytes !== undefined && total > opts.maxBytes) {
        throw new FileTooLargeError(opts.maxBytes, total);
      }
      if (opts.expectedBytes !== undefined && total > opts.expectedBytes) {
        throw new Error(
          `download longer than declared: ${total} bytes arrived, ${opts.expectedBytes} declared`,
        );
      }
      hash?.update(value);
      await writeAll(file, value);
      written += value.byteLength;
    }
    if (opts.expectedBytes !== undefined && written !== opts.expectedBytes) {
      throw new Error(`truncated download: got ${written} of ${opts.expectedBytes} bytes`);
    }
    const got = hash?.digest("hex");
    if (opts.digest && got !== opts.digest.hex) throw new DigestMismatchError(opts.digest, got!);
    // Data must be on disk before the rename publishes it, or a power loss could expose junk.
    await file.syncData();
    file.close();
    file = undefined;
    await Deno.rename(partial, dest);
    return written;
  } catch (err) {
    await reader.cancel(err).catch(() => {});
    try {
      file?.close();
    } catch { /* already closed */ }
    await Deno.remove(partial).catch(() => {});
    throw err;
  } finally {
    reader.releaseLock();
  }
}

/** Deletes partial files in `dir` not modified for `maxAgeMs` (left by crashed downloads). */
export async function removeStalePartials(dir: string, maxAgeMs: number): Promise<number> {
  let removed = 0;
  const now = Date.now();
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile || !isPartialName(entry.name)) continue;
      const path = join(dir, entry.name);
      // A live download (here or in another process sharing the cache) keeps its mtime fresh.
      const mtime = (await Deno.stat(path).catch(() => null))?.mtime?.getTime();
      if (mtime !== undefined && now - mtime > maxAgeMs) {
        await Deno.remove(path).then(() => removed++, () => {});
      }
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return removed;
}

function randomSuffix(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function writeAll(file: Deno.FsFile, chunk: Uint8Array): Promise<void> {
  let off = 0;
  while (off < chunk.byteLength) off += await file.write(chunk.subarray(off));
}

/** One `read()` bounded by the idle timeout and the abort signal. */
function readWithDeadline(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  opts: AtomicWriteOptions,
): Promise<ReadableStreamReadResult<Uint8Array>> {
  const { signal } = opts;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const idleMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const onAbort = () => finish(() => reject(signal!.reason));
    const id = setTimeout(() => finish(() => reject(new StalledDownloadError(idleMs))), idleMs);
    const finish = (settle: () => void) => {
      clearTimeout(id);
      signal?.removeEventListener("abort", onAbort);
      settle();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    reader.read().then(
      (r) => finish(() => resolve(r)),
      (e) => finish(() => reject(e)),
    );
  });
}
