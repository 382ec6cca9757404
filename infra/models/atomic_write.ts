/** Atomic file writes: readers see the old file or the whole new one, never a partial one. */
import { dirname } from "node:path";
import { writeStreamAtomic } from "@svc/worker/weights";

/**
 * Write `bytes` to `path` (creating parent dirs) with the weight cache's own atomic writer: the
 * model lands in that cache, so its partial files must be the kind the worker knows to ignore.
 */
export async function writeFileAtomic(path: string, bytes: Uint8Array): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true });
  await writeStreamAtomic(path, ReadableStream.from([bytes]));
}

/** Write a JSON value with stable formatting (2-space indent, trailing newline). */
export async function writeJsonAtomic(path: string, value: unknown): Promise<number> {
  const bytes = new TextEncoder().encode(JSON.stringify(value, null, 2) + "\n");
  await writeFileAtomic(path, bytes);
  return bytes.length;
}
