/**
 * Validation of repository ids, revisions and file paths, and their mapping onto the
 * `<base>/<org>/<name>/<path>` layout shared by the local cache and the cluster cache.
 */
import { isAbsolute, join, relative, resolve } from "node:path";
import { isSafeModelId } from "@svc/shared/catalog/schema";
import { ServiceError } from "@svc/shared/errors";

/** Same bound as the catalog schema's revision field; `.`/`..` are excluded separately. */
const REVISION_RE = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_PATH_LENGTH = 300;

/** Whether `repo` is a safe `org/name` id (the cache layout needs both parts). */
export function isSafeRepo(repo: string): boolean {
  return isSafeModelId(repo) && repo.split("/").length === 2;
}

/** Whether `revision` is a plain branch, tag or commit name. */
export function isSafeRevision(revision: string): boolean {
  // "." and ".." pass the character class but would be normalised away inside hub URLs.
  return REVISION_RE.test(revision) && revision !== "." && revision !== "..";
}

/** Throws unless `repo` is a safe `org/name` id (the cache layout needs both parts). */
export function assertSafeRepo(repo: string): void {
  if (!isSafeRepo(repo)) {
    throw new ServiceError(
      "INTERNAL_ERROR",
      `invalid weights repository id ${JSON.stringify(repo)}: expected 'org/name'`,
    );
  }
}

/** Throws unless `revision` is a plain branch, tag or commit name. */
export function assertSafeRevision(revision: string): void {
  if (!isSafeRevision(revision)) {
    throw new ServiceError(
      "INTERNAL_ERROR",
      `invalid weights revision ${JSON.stringify(revision)}`,
    );
  }
}

/** Throws unless `path` is a relative, normalised repository path that cannot escape its root. */
export function assertSafeRepoPath(path: string): void {
  const segments = path.split("/");
  const bad = path.length === 0 || path.length > MAX_PATH_LENGTH || isAbsolute(path) ||
    path.includes("\\") || path.includes(":") || path.includes("\0") ||
    segments.some((s) => s === "" || s === "." || s === "..");
  if (bad) {
    throw new ServiceError(
      "INTERNAL_ERROR",
      `invalid weights file path ${JSON.stringify(path)}: must be relative, without '..'`,
    );
  }
}

/** Local path of a repository file under `base`; validates inputs and re-checks containment. */
export function repoFilePath(base: string, repo: string, path: string): string {
  assertSafeRepo(repo);
  assertSafeRepoPath(path);
  const root = resolve(base);
  const full = join(root, ...repo.split("/"), ...path.split("/"));
  // Belt and braces: the checks above should make this impossible, but an escape would be fatal.
  const rel = relative(root, full);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) {
    throw new ServiceError("INTERNAL_ERROR", `weights path escapes the cache: ${path}`);
  }
  return full;
}

/** URL of a repository file under an http(s) `base`; every segment is percent-encoded. */
export function repoFileUrl(base: string, repo: string, path: string): URL {
  assertSafeRepo(repo);
  assertSafeRepoPath(path);
  const segments = [...repo.split("/"), ...path.split("/")].map(encodeURIComponent);
  const url = new URL(base);
  url.pathname = url.pathname.replace(/\/+$/, "") + "/" + segments.join("/");
  return url;
}
