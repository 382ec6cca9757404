/** File side of the fake hub: lookup in the `<root>/<org>/<name>/<path>` layout, hashes, ranges. */
import { createHash } from "node:crypto";
import { join } from "node:path";

/** How a planned failure behaves once `afterBytes` of the body were sent. */
export type FaultMode = "error" | "stall-body" | "stall-headers";

/** A one-shot failure injected into the next full (non-range) GET of a matching path. */
export interface Fault {
  mode: FaultMode;
  afterBytes: number;
}

/** Promises parked by stall faults; all released when the server closes. */
export class Stalls {
  #waiters = new Set<() => void>();
  #released = false;

  /** Resolves only when {@link releaseAll} is called (at once if it already was). */
  wait(): Promise<void> {
    // A handler that reaches its stall after the close began must not park: the shutdown
    // waits for every handler, so it would wait for ever.
    if (this.#released) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.add(resolve));
  }

  /** Wakes every stalled handler, now and later (server shutdown). */
  releaseAll(): void {
    this.#released = true;
    for (const wake of this.#waiters) wake();
    this.#waiters.clear();
  }
}

/** Local path of `<org>/<name>/<path...>` under root; segments must already be validated. */
export function layoutPath(root: string, repo: string, path: string[] = []): string {
  return join(root, ...repo.split("/"), ...path);
}

/** Stat that answers null instead of throwing for missing entries. */
export async function statOrNull(path: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.stat(path);
  } catch {
    return null;
  }
}

const blobIds = new Map<string, Promise<string>>();

/** Git blob id (sha1 of `blob <size>\0<bytes>`), what the hub reports as oid/ETag of small files. */
export function gitBlobId(path: string, info: Deno.FileInfo): Promise<string> {
  const key = `${path}:${info.size}:${info.mtime?.getTime()}`;
  let id = blobIds.get(key);
  if (!id) {
    id = (async () => {
      const hash = createHash("sha1").update(`blob ${info.size}\0`);
      using file = await Deno.open(path);
      for await (const chunk of file.readable) hash.update(chunk);
      return hash.digest("hex");
    })();
    blobIds.set(key, id);
  }
  return id;
}

/** A stable fake commit id per repository (40 hex, like a git sha). */
export function fakeCommit(repo: string): string {
  return createHash("sha1").update(`commit:${repo}`).digest("hex");
}

/** Parsed `Range` header: a byte window, "unsatisfiable", or null (absent/ignored). */
export function parseRange(
  header: string | null,
  size: number,
): { start: number; end: number } | "unsatisfiable" | null {
  if (!header) return null;
  // Like most servers, multi-range and malformed headers are ignored (full 200 response).
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null;
  let start: number;
  let end: number;
  if (m[1] === "") {
    start = Math.max(0, size - Number(m[2]));
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return "unsatisfiable";
  return { start, end };
}

/** Body of bytes [start, end] of a file, optionally failing or stalling per `fault`. */
export function fileBody(
  path: string,
  start: number,
  end: number,
  fault: Fault | undefined,
  stalls: Stalls,
): ReadableStream<Uint8Array> {
  let file: Deno.FsFile | undefined;
  let pos = start;
  let sent = 0;
  let done = false;
  const close = () => {
    if (done) return;
    done = true;
    file?.close();
  };
  return new ReadableStream<Uint8Array>({
    async start() {
      file = await Deno.open(path);
      await file.seek(start, Deno.SeekMode.Start);
    },
    async pull(ctrl) {
      if (fault && sent >= fault.afterBytes) {
        if (fault.mode === "error") {
          // Ending early under a larger Content-Length drops the connection mid-body, as a
          // network failure would (and, unlike ctrl.error, the server logs nothing).
          close();
          ctrl.close();
          return;
        }
        await stalls.wait();
        if (!done) {
          close();
          ctrl.close();
        }
        return;
      }
      const limit = fault ? fault.afterBytes - sent : Infinity;
      const want = Math.min(64 * 1024, end + 1 - pos, limit);
      if (want <= 0 || done) {
        close();
        if (want <= 0) ctrl.close();
        return;
      }
      const buf = new Uint8Array(want);
      const n = await file!.read(buf);
      if (n === null) {
        close();
        ctrl.close();
        return;
      }
      pos += n;
      sent += n;
      ctrl.enqueue(buf.subarray(0, n));
    },
    cancel() {
      close();
    },
  });
}

/** Every regular file under `dir` as a relative `a/b/c` path (partial downloads skipped). */
export async function listFiles(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch {
    return out;
  }
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory) out.push(...await listFiles(join(dir, e.name), rel));
    else if (e.isFile && !e.name.includes(".partial-")) out.push(rel);
  }
  return out;
}
