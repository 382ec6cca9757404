/** Atomic file writes: readers see the old file or the whole new one, never a partial one. */
import { dirname } from "node:path";

/** Write `bytes` to `path` through a temporary sibling and a rename (creates parent dirs). */
export async function writeFileAtomic(path: string, bytes: Uint8Array): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await Deno.writeFile(tmp, bytes);
    await Deno.rename(tmp, path);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw err;
  }
}

/** Write a JSON value with stable formatting (2-space indent, trailing newline). */
export async function writeJsonAtomic(path: string, value: unknown): Promise<number> {
  const bytes = new TextEncoder().encode(JSON.stringify(value, null, 2) + "\n");
  await writeFileAtomic(path, bytes);
  return bytes.length;
}
