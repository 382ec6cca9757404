/**
 * The model hub as a weight source, through @huggingface/hub's `downloadFile` (which probes
 * `GET {hub}/{repo}/resolve/{rev}/{path}` with `Range: bytes=0-0`, then GETs the file).
 * Every HTTP call goes through our fetch wrapper: time bound, abort, and the token.
 */
import { downloadFile, HubApiError, listFiles } from "@huggingface/hub";
import { DEFAULT_IDLE_TIMEOUT_MS, type ExpectedDigest, writeStreamAtomic } from "./atomic_file.ts";
import { accessDeniedError, checkFileSize, sourceFailedError, tooLargeError } from "./errors.ts";
import { DEFAULT_HTTP_TIMEOUT_MS, fetchWithTimeout, HttpTimeoutError } from "./http.ts";
import type { WeightFileRef, WeightSource } from "./types.ts";
import { MAX_LISTED_FILES } from "./listing.ts";

/** The name the hub source reports in logs and errors. */
export const HUB_SOURCE = "hub";

/** Default hub (SVC_HUB_URL unset). */
export const DEFAULT_HUB_URL = "https://huggingface.co";

/** Options of {@link createHubSource}. */
export interface HubSourceOptions {
  /** Hub base URL (SVC_HUB_URL); default https://huggingface.co. */
  hubUrl?: string;
  /** Access token (HF_TOKEN) for gated/private repositories. Never logged. */
  token?: string;
  /** Bound for each HTTP call to answer (headers). */
  timeoutMs?: number;
  /** Bound on silence while streaming a body. */
  idleTimeoutMs?: number;
  /** Injected fetch for tests. */
  fetch?: typeof fetch;
}

/** What the last failed HTTP response said; HubApiError drops the hub's `X-Error-Code`. */
interface LastFailure {
  status: number;
  code: string | null;
}

/** What went wrong under the library, which passes some errors on as bare strings. */
interface FailureNotes {
  last?: LastFailure;
  /** One of our calls ran out of time. */
  timedOut?: boolean;
  /** The file's ETag as the hub's answer stated it (`X-Linked-Etag` first, for LFS files). */
  etag?: string;
}

/**
 * The hash a hub ETag stands for: 64 hex digits are an LFS file's sha256, 40 the git blob id
 * (sha1 of `blob <size>\0` + bytes) of a small file. Anything else (a CDN's own tag) is no claim.
 */
export function digestFromEtag(etag: string | undefined, size: number): ExpectedDigest | undefined {
  const hex = etag?.replace(/^W\//, "").replace(/"/g, "").toLowerCase();
  if (!hex) return undefined;
  if (/^[0-9a-f]{64}$/.test(hex)) return { algorithm: "sha256", hex };
  if (/^[0-9a-f]{40}$/.test(hex)) return { algorithm: "sha1", prefix: `blob ${size}\0`, hex };
  return undefined;
}

/** A WeightSource downloading from the model hub into a temp file, then renaming. */
export function createHubSource(opts: HubSourceOptions = {}): WeightSource {
  const hubUrl = (opts.hubUrl ?? DEFAULT_HUB_URL).replace(/\/+$/, "");
  const hubOrigin = new URL(hubUrl).origin;
  const idleTimeoutMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const token = opts.token || undefined;

  return {
    name: HUB_SOURCE,
    async fetchTo(ref: WeightFileRef, dest: string, signal?: AbortSignal): Promise<boolean> {
      const failure: FailureNotes = {};
      const hubFetch = createHubFetch({ ...opts, hubOrigin, token, signal, failure });
      try {
        const blob = await downloadFile({
          // An object, not a string: a repo named like `datasets/x` must stay a model repo.
          repo: { type: "model", name: ref.repo },
          // The library pastes the path into the URL unencoded; `#` or `?` would break it.
          path: ref.path.split("/").map(encodeURIComponent).join("/"),
          revision: ref.revision,
          hubUrl,
          fetch: hubFetch,
          // Plain HTTP (resolve → CDN redirect) instead of the xet chunk protocol: fewer moving
          // parts, and our wrapper sees every byte-carrying request.
          xet: false,
        });
        if (!blob) return false;
        // The size is known from the probe: a file over the caller's bound is never downloaded.
        checkFileSize(ref, blob.size);
        // Size and, where the hub stated one, hash are checked before the file is committed; a
        // body longer than the size stated stops there.
        await writeStreamAtomic(dest, blob.stream(), {
          signal,
          idleTimeoutMs,
          expectedBytes: blob.size,
          maxBytes: ref.maxBytes,
          digest: digestFromEtag(failure.etag, blob.size),
        });
        return true;
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        const tooLarge = tooLargeError(ref, err);
        if (tooLarge) throw tooLarge;
        const status = err instanceof HubApiError ? err.statusCode : failure.last?.status;
        if (status === 401 || status === 403) {
          const maybeMissing = failure.last?.code === "RepoNotFound";
          throw accessDeniedError(ref, status, token !== undefined, maybeMissing);
        }
        // Unknown repo, revision or file: this source does not have it.
        if (status === 404) return false;
        throw sourceFailedError(HUB_SOURCE, ref, err, token, failure.timedOut);
      }
    },
    async list(repo: string, revision: string, signal?: AbortSignal) {
      const failure: FailureNotes = {};
      const hubFetch = createHubFetch({ ...opts, hubOrigin, token, signal, failure });
      const ref: WeightFileRef = { repo, revision, path: "(file list)" };
      try {
        const paths: string[] = [];
        const entries = listFiles({
          repo: { type: "model", name: repo },
          revision,
          recursive: true,
          hubUrl,
          fetch: hubFetch,
        });
        for await (const e of entries) {
          if (e.type !== "file") continue;
          // A repository is a handful of files; the bound keeps a hostile answer small.
          if (paths.length >= MAX_LISTED_FILES) {
            throw new Error(`the repository lists more than ${MAX_LISTED_FILES} files`);
          }
          paths.push(e.path);
        }
        return paths;
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        const status = err instanceof HubApiError ? err.statusCode : failure.last?.status;
        if (status === 401 || status === 403) {
          const maybeMissing = failure.last?.code === "RepoNotFound";
          throw accessDeniedError(ref, status, token !== undefined, maybeMissing);
        }
        if (status === 404) return undefined;
        throw sourceFailedError(HUB_SOURCE, ref, err, token, failure.timedOut);
      }
    },
  };
}

interface HubFetchContext extends HubSourceOptions {
  hubOrigin: string;
  signal?: AbortSignal;
  failure: FailureNotes;
}

/**
 * The fetch handed to the library. It adds the token itself (only for the hub's origin, so a
 * CDN redirect target never sees it; and the library would reject tokens not starting `hf_`),
 * bounds each call, and buffers the small probe and error bodies the library never reads.
 */
function createHubFetch(ctx: HubFetchContext): typeof fetch {
  const timeoutMs = ctx.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : input);
    const headers = new Headers(init?.headers);
    if (ctx.token && url.origin === ctx.hubOrigin) {
      headers.set("Authorization", `Bearer ${ctx.token}`);
    }
    const isProbe = headers.get("range") === "bytes=0-0";
    const res = await fetchWithTimeout(url, { ...init, headers }, {
      timeoutMs,
      signal: ctx.signal,
      fetch: ctx.fetch,
      buffer: (r) => !r.ok || (isProbe && r.status === 206),
    }).catch((err) => {
      if (err instanceof HttpTimeoutError) ctx.failure.timedOut = true;
      throw err;
    });
    if (!res.ok) ctx.failure.last = { status: res.status, code: res.headers.get("x-error-code") };
    const etag = res.headers.get("x-linked-etag") ?? res.headers.get("etag");
    if (res.ok && etag) ctx.failure.etag = etag;
    // A 200 probe is either xet metadata (headers suffice) or a server ignoring Range: either
    // way the library only reads headers, and the body must not be downloaded or leaked.
    if (isProbe && res.status === 200) await res.body?.cancel();
    return res;
  };
}
