/**
 * Files of a model directory (`SVC_MODELS` entries `ID=DIRECTORY`) stay inside it: each is
 * resolved where it really is (links followed) and refused when that is outside the directory,
 * so a link such as `config.json -> /etc/passwd` or `onnx/model.onnx -> /elsewhere` is never
 * read, loaded or served. `SVC_MODELS_FOLLOW_LINKS=1` allows links for layouts that need them
 * (a hub cache's snapshot folder links to blobs beside it).
 */
import { join, sep } from "node:path";
import { IncompatibleModelError } from "../registry/runner.ts";

/** A directory file that resolves outside its directory. */
export class OutsideDirectoryError extends IncompatibleModelError {
  constructor(readonly file: string) {
    super(
      `${file}: resolves outside the model's directory (a link); copy the file into the ` +
        "directory, or set SVC_MODELS_FOLLOW_LINKS=1 to allow links",
    );
    this.name = "OutsideDirectoryError";
  }
}

/**
 * The path to read for `file` (a repository path such as `onnx/model.onnx`) of the directory
 * `dir`: its real path, when that is inside the directory's real path; with `followLinks`, the
 * joined path as is. Throws OutsideDirectoryError otherwise, and the OS's error for a file that
 * does not exist.
 */
export async function containedFile(
  dir: string,
  file: string,
  followLinks: boolean,
): Promise<string> {
  const path = join(dir, ...file.split("/"));
  if (followLinks) return path;
  const [realDir, real] = await Promise.all([Deno.realPath(dir), Deno.realPath(path)]);
  const inside = realDir.endsWith(sep) ? realDir : realDir + sep;
  if (!real.startsWith(inside)) throw new OutsideDirectoryError(file);
  return real;
}
