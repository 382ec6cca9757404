/** Test data on disk, handled in-process (a `cp` or `find` child would be one more process). */
import { join, relative } from "node:path";

/** Copy a directory tree: `to` is created and gets `from`'s files and folders. */
export async function copyDir(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isDirectory) await copyDir(join(from, e.name), join(to, e.name));
    else await Deno.copyFile(join(from, e.name), join(to, e.name));
  }
}

/** Every file under `dir`, as sorted paths relative to it. */
export async function listFiles(dir: string, out: string[] = [], root = dir): Promise<string[]> {
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) await listFiles(p, out, root);
    else out.push(relative(root, p));
  }
  return out.sort();
}
