/** Test data on disk, handled in-process (a `cp` child would be one more process). */
import { join } from "node:path";

/** Copy a directory tree: `to` is created and gets `from`'s files and folders. */
export async function copyDir(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isDirectory) await copyDir(join(from, e.name), join(to, e.name));
    else await Deno.copyFile(join(from, e.name), join(to, e.name));
  }
}
