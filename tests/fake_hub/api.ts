/** JSON API of the fake hub: model info (`/api/models/{repo}[/revision/{rev}]`) and tree listing. */
import { join } from "node:path";
import { fakeCommit, gitBlobId, layoutPath, listFiles, statOrNull } from "./files.ts";

/** One entry of `/api/models/{repo}/tree/{rev}[/{path}]`, shaped like the hub's. */
export interface TreeEntry {
  type: "file" | "directory";
  oid: string;
  size: number;
  path: string;
}

/** JSON error response the way the hub sends them (`X-Error-Code`, `{error}` body). */
export function hubError(status: number, code: string, message: string): Response {
  return Response.json({ error: message }, {
    status,
    headers: { "x-error-code": code, "x-error-message": message },
  });
}

/** Model info: id, sha, gated flag and `siblings` (what `modelInfo`/`listFiles` callers read). */
export async function modelInfo(root: string, repo: string, gated: boolean): Promise<Response> {
  const dir = layoutPath(root, repo);
  const info = await statOrNull(dir);
  const files = await listFiles(dir);
  const sha = fakeCommit(repo);
  const lastModified = (info?.mtime ?? new Date(0)).toISOString();
  return Response.json({
    _id: sha.slice(0, 24),
    id: repo,
    modelId: repo,
    author: repo.split("/")[0],
    sha,
    private: false,
    gated: gated ? "manual" : false,
    disabled: false,
    downloads: 0,
    likes: 0,
    tags: [],
    library_name: "onnx",
    createdAt: lastModified,
    lastModified,
    siblings: files.map((rfilename) => ({ rfilename })),
  }, { headers: { "x-repo-commit": sha } });
}

/** Tree listing of a folder of the repository (`recursive=true` walks sub-folders). */
export async function tree(
  root: string,
  repo: string,
  sub: string[],
  recursive: boolean,
): Promise<Response> {
  const base = layoutPath(root, repo, sub);
  if (!(await statOrNull(base))?.isDirectory) {
    return hubError(404, "EntryNotFound", `${sub.join("/")} does not exist on "main"`);
  }
  const prefix = sub.join("/");
  const entries: TreeEntry[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    const children = await Array.fromAsync(Deno.readDir(dir));
    for (const c of children.sort((a, b) => a.name.localeCompare(b.name))) {
      const path = rel ? `${rel}/${c.name}` : c.name;
      const full = join(dir, c.name);
      if (c.isDirectory) {
        entries.push({ type: "directory", oid: fakeCommit(path), size: 0, path });
        if (recursive) await walk(full, path);
      } else if (c.isFile && !c.name.includes(".partial-")) {
        const info = await Deno.stat(full);
        entries.push({ type: "file", oid: await gitBlobId(full, info), size: info.size, path });
      }
    }
  };
  await walk(base, prefix);
  return Response.json(entries);
}
