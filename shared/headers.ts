/** HTTP header names used on the wire (lower-case; HTTP headers are case-insensitive). */
export const HeaderNames = {
  totalTime: "X-Total-Time",
  queueTime: "X-Queue-Time",
  tokenizationTime: "X-Tokenization-Time",
  inferenceTime: "X-Inference-Time",
  postprocessingTime: "X-Postprocessing-Time",
  traceId: "X-Trace-ID",
  /** On every answer: the client's own request id when it sent one, else the trace id. */
  requestId: "x-request-id",
  /** Items of the request the model read only in part (cut to its length); `0` when none. */
  truncatedItems: "X-Truncated-Items",
  serverVersion: "X-SVC-Server-Version",
  /** The same version under the SIE clients' name: their version-skew warning reads this one. */
  serverVersionSie: "X-SIE-Server-Version",
  /**
   * Worker → router → client: the revision of the model that computed the answer (a digest of
   * the release, the catalog entry and the weights' content). Absent on answers that used a LoRA
   * adapter. The router's result cache keeps only answers that carry one.
   */
  modelRevision: "X-SVC-Model-Revision",
  /**
   * Worker → router → client, on heavy extract answers: the tokens the model read for the
   * request, every run together, as its cost model counts them (SVC_MAX_EXTRACT_REQUEST_TOKENS
   * bounds it).
   */
  extractTokens: "X-SVC-Extract-Tokens",
  /** Router → client: `hit`, `miss` or `bypass`: how the result cache took part in the answer. */
  cache: "X-SVC-Cache",
  /** Router → client: which worker answered (affinity and debugging). */
  workerId: "X-SVC-Worker-ID",
  machineProfile: "X-SVC-MACHINE-PROFILE",
  /** Spelling used by the SIE client libraries; accepted as an alias. */
  machineProfileAlias: "X-SIE-MACHINE-PROFILE",
  /**
   * The SIE clients' pool header (their `gpu: "pool/gpu"`): it names the pool the way
   * `X-SVC-MACHINE-PROFILE` does, and that header beside it then names the GPU type
   * (router/pools/resolve.ts).
   */
  siePool: "X-SIE-Pool",
  retryAfter: "Retry-After",
  /**
   * Router → client on `WORKER_LOST`: `false` tells the OpenAI client libraries not to retry
   * the 502 (they retry every 5xx unless told).
   */
  shouldRetry: "X-Should-Retry",
} as const;

/** Media types the codec negotiates. */
export const MediaTypes = {
  msgpack: "application/msgpack",
  msgpackAlt: "application/x-msgpack",
  json: "application/json",
} as const;

/** Put the service version on a response under both names (ours and the SIE clients'). */
export function setServerVersion(headers: Headers, version: string): void {
  headers.set(HeaderNames.serverVersion, version);
  headers.set(HeaderNames.serverVersionSie, version);
}

/** The version headers of {@link setServerVersion} as a plain record (for answers built whole). */
export function serverVersionHeaders(version: string): Record<string, string> {
  return { [HeaderNames.serverVersion]: version, [HeaderNames.serverVersionSie]: version };
}
