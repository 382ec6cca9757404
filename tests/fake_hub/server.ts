/**
 * A fake model hub on 127.0.0.1 serving a directory in the cache layout `<root>/<org>/<name>/<path>`
 * the way the hub's HTTP API answers @huggingface/hub (2.17) download calls:
 *
 * - `GET|HEAD /{org}/{name}/resolve/{rev}/{path}` (and `/raw/`): the file, with `ETag`,
 *   `X-Repo-Commit`, `Content-Length`, `Accept-Ranges`; `Range` → 206 + `Content-Range` (the
 *   library's `fileDownloadInfo` probes with `Range: bytes=0-0` and reads the size from it).
 *   With `redirect: true`, answers 302 to a signed `/_cdn/...` URL like the hub does for LFS files.
 * - Errors like the hub: 404 `X-Error-Code: EntryNotFound` (missing file; the library turns it
 *   into `null`), 401 (anonymous) / 404 `RepoNotFound`, gated repos 401 without a token and 403
 *   with a wrong one (`X-Error-Code: GatedRepo`), JSON `{error}` bodies.
 * - `GET /api/models/{repo}`, `/api/models/{repo}/revision/{rev}`, `/api/models/{repo}/tree/{rev}[/{path}]`.
 * - `GET|HEAD /_static/{org}/{name}/{path}`: plain static files (an http cluster cache, no auth);
 *   with `chunkedStatic`, sent chunked with no length, ETag or ranges.
 *
 * Any revision serves the same files (the layout has no revisions); the commit id is a stable fake.
 */
import { hubError, modelInfo, tree } from "./api.ts";
import {
  fakeCommit,
  type Fault,
  type FaultMode,
  fileBody,
  gitBlobId,
  layoutPath,
  parseRange,
  Stalls,
  statOrNull,
} from "./files.ts";

export type { FaultMode } from "./files.ts";

/** Options of {@link startFakeHub}. */
export interface FakeHubOptions {
  /** Directory in the cache layout `<root>/<org>/<name>/<path>`. */
  root: string;
  /** Gated repositories and the one token each accepts (`Authorization: Bearer <token>`). */
  gated?: Record<string, string>;
  /** Answer resolve requests with a 302 to a signed same-origin `/_cdn/` URL, like LFS files. */
  redirect?: boolean;
  /**
   * Send `/_static` files chunked, with no `Content-Length`, `ETag` or range support, as a proxy
   * that streams them would: a body cut short by an `error` fault then ends like a whole file.
   */
  chunkedStatic?: boolean;
}

/** One request as the fake hub saw it (no headers: tokens are never recorded). */
export interface RecordedRequest {
  method: string;
  /** Decoded URL path, e.g. `/org/name/resolve/main/onnx/model.onnx`. */
  path: string;
  /** The `Range` header, when sent. */
  range?: string;
  /** Response status (0 while still being answered). */
  status: number;
}

/** A running fake hub. */
export interface FakeHub {
  /** Hub base URL, e.g. `http://127.0.0.1:41234` (pass as `hubUrl`). */
  url: string;
  /** Base URL of the static mode, usable as an http cluster cache: `<url>/_static`. */
  staticUrl: string;
  /** Every request so far, in arrival order. */
  requests: RecordedRequest[];
  /**
   * Makes the next full (non-Range) GET whose path ends with `pathSuffix` fail: `error` cuts the
   * body after `afterBytes`, `stall-body` stops sending after `afterBytes`, `stall-headers`
   * never answers. Stalls end when the server closes.
   */
  fault(pathSuffix: string, mode: FaultMode, afterBytes?: number): void;
  /** The fake commit id reported for a repository. */
  commitOf(repo: string): string;
  /** Stops the server (releases stalled requests first). */
  close(): Promise<void>;
}

/** Starts a fake hub on 127.0.0.1 with an ephemeral port. */
export function startFakeHub(opts: FakeHubOptions): Promise<FakeHub> {
  const requests: RecordedRequest[] = [];
  const faults: { suffix: string; fault: Fault }[] = [];
  const stalls = new Stalls();
  // Stands in for the CDN's URL signature: only URLs handed out by this server work.
  const cdnSecret = crypto.randomUUID();
  const ctx: Ctx = { opts, faults, stalls, cdnSecret };

  const handler = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const record: RecordedRequest = { method: req.method, path: url.pathname, status: 0 };
    const range = req.headers.get("range");
    if (range !== null) record.range = range;
    requests.push(record);
    let res: Response;
    try {
      const segs = decodeSegments(url.pathname);
      if (segs) record.path = "/" + segs.join("/");
      res = segs ? await route(ctx, req, segs, url) : hubError(400, "BadRequest", "bad path");
    } catch (err) {
      res = hubError(500, "InternalError", String(err));
    }
    record.status = res.status;
    return res;
  };

  return new Promise((resolveStart) => {
    const server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      onListen: ({ port }) => {
        const url = `http://127.0.0.1:${port}`;
        resolveStart({
          url,
          staticUrl: `${url}/_static`,
          requests,
          fault: (suffix, mode, afterBytes = 0) =>
            faults.push({ suffix, fault: { mode, afterBytes } }),
          commitOf: fakeCommit,
          close: async () => {
            stalls.releaseAll();
            await server.shutdown();
          },
        });
      },
    }, handler);
  });
}

interface Ctx {
  opts: FakeHubOptions;
  faults: { suffix: string; fault: Fault }[];
  stalls: Stalls;
  cdnSecret: string;
}

/** Splits and decodes the path; null when a segment could escape the root. */
function decodeSegments(pathname: string): string[] | null {
  try {
    const segs = pathname.split("/").slice(1).map(decodeURIComponent);
    const bad = segs.some((s) => s === "" || s === "." || s === ".." || /[\\/\0]/.test(s));
    return bad ? null : segs;
  } catch {
    return null;
  }
}

async function route(ctx: Ctx, req: Request, segs: string[], url: URL): Promise<Response> {
  const { root } = ctx.opts;
  if (req.method !== "GET" && req.method !== "HEAD") {
    return hubError(405, "MethodNotAllowed", "read-only fake hub");
  }
  if (segs[0] === "api" && segs[1] === "models" && segs.length >= 4) {
    const repo = `${segs[2]}/${segs[3]}`;
    const rest = segs.slice(4);
    const exists = (await statOrNull(layoutPath(root, repo)))?.isDirectory;
    if (!exists) return repoNotFound(req, repo);
    if (rest.length === 0 || (rest[0] === "revision" && rest.length === 2)) {
      return modelInfo(root, repo, repo in (ctx.opts.gated ?? {}));
    }
    if (rest[0] === "tree" && rest.length >= 2) {
      return tree(root, repo, rest.slice(2), url.searchParams.get("recursive") === "true");
    }
    return hubError(404, "NotFound", "unknown API route");
  }
  if (segs[0] === "_static" && segs.length >= 4) {
    const file = layoutPath(root, `${segs[1]}/${segs[2]}`, segs.slice(3));
    if (ctx.opts.chunkedStatic) return serveChunked(ctx, req, url, file);
    return serveFile(ctx, req, url, file, {});
  }
  if (segs[0] === "_cdn" && segs.length >= 5) {
    if (segs[1] !== ctx.cdnSecret) return new Response("bad signature", { status: 403 });
    const repo = `${segs[2]}/${segs[3]}`;
    const file = layoutPath(root, repo, segs.slice(4));
    return serveFile(ctx, req, url, file, { "x-repo-commit": fakeCommit(repo) });
  }
  if (segs.length >= 5 && (segs[2] === "resolve" || segs[2] === "raw")) {
    return resolveFile(ctx, req, url, `${segs[0]}/${segs[1]}`, segs.slice(4));
  }
  return hubError(404, "NotFound", "not found");
}

/** The hub hides whether a repository exists from anonymous callers: 401, else 404. */
function repoNotFound(req: Request, repo: string): Response {
  const status = req.headers.has("authorization") ? 404 : 401;
  return hubError(status, "RepoNotFound", `Repository Not Found for url: ${repo}`);
}

async function resolveFile(
  ctx: Ctx,
  req: Request,
  url: URL,
  repo: string,
  path: string[],
): Promise<Response> {
  const { root, gated = {} } = ctx.opts;
  if (!(await statOrNull(layoutPath(root, repo)))?.isDirectory) return repoNotFound(req, repo);
  if (repo in gated) {
    const auth = req.headers.get("authorization");
    if (!auth) {
      return hubError(
        401,
        "GatedRepo",
        `Access to model ${repo} is restricted. You must have access to it and be authenticated.`,
      );
    }
    if (auth !== `Bearer ${gated[repo]}`) {
      return hubError(
        403,
        "GatedRepo",
        `Access to model ${repo} is restricted and you are not in the authorized list.`,
      );
    }
  }
  const file = layoutPath(root, repo, path);
  const info = await statOrNull(file);
  if (!info?.isFile) {
    return hubError(404, "EntryNotFound", `${path.join("/")} does not exist on this revision`);
  }
  const commit = fakeCommit(repo);
  if (ctx.opts.redirect) {
    const etag = `"${await gitBlobId(file, info)}"`;
    const location = ["_cdn", ctx.cdnSecret, ...repo.split("/"), ...path]
      .map(encodeURIComponent).join("/");
    return new Response(null, {
      status: 302,
      headers: {
        location: `/${location}`,
        "x-repo-commit": commit,
        "x-linked-size": String(info.size),
        "x-linked-etag": etag,
        etag,
      },
    });
  }
  return serveFile(ctx, req, url, file, { "x-repo-commit": commit });
}

/** A file with size, ETag and range support; applies a pending fault to full GETs. */
async function serveFile(
  ctx: Ctx,
  req: Request,
  url: URL,
  file: string,
  extra: Record<string, string>,
): Promise<Response> {
  const info = await statOrNull(file);
  if (!info?.isFile) return hubError(404, "EntryNotFound", "file not found");
  const headers = new Headers({
    ...extra,
    etag: `"${await gitBlobId(file, info)}"`,
    "accept-ranges": "bytes",
    "content-type": "application/octet-stream",
  });
  const range = parseRange(req.headers.get("range"), info.size);
  if (range === "unsatisfiable") {
    headers.set("content-range", `bytes */${info.size}`);
    return new Response(null, { status: 416, headers });
  }
  const { start, end } = range ?? { start: 0, end: info.size - 1 };
  const length = Math.max(0, end - start + 1);
  headers.set("content-length", String(length));
  if (range) headers.set("content-range", `bytes ${start}-${end}/${info.size}`);
  const status = range ? 206 : 200;
  if (req.method === "HEAD") return new Response(null, { status, headers });
  const fault = range ? undefined : takeFault(ctx, url.pathname);
  if (fault?.mode === "stall-headers") {
    await ctx.stalls.wait();
    return hubError(503, "Stalled", "released at shutdown");
  }
  if (length === 0) return new Response(null, { status, headers });
  return new Response(fileBody(file, start, end, fault, ctx.stalls), { status, headers });
}

/** A file as a stream of unknown length (chunked): no size, tag or range to check it by. */
async function serveChunked(ctx: Ctx, req: Request, url: URL, file: string): Promise<Response> {
  const info = await statOrNull(file);
  if (!info?.isFile) return hubError(404, "EntryNotFound", "file not found");
  const headers = new Headers({ "content-type": "application/octet-stream" });
  if (req.method === "HEAD") return new Response(null, { status: 200, headers });
  const fault = takeFault(ctx, url.pathname);
  if (fault?.mode === "stall-headers") {
    await ctx.stalls.wait();
    return hubError(503, "Stalled", "released at shutdown");
  }
  return new Response(fileBody(file, 0, info.size - 1, fault, ctx.stalls), { headers });
}

function takeFault(ctx: Ctx, pathname: string): Fault | undefined {
  const decoded = decodeURIComponent(pathname);
  const i = ctx.faults.findIndex((f) => decoded.endsWith(f.suffix));
  if (i < 0) return undefined;
  return ctx.faults.splice(i, 1)[0].fault;
}
