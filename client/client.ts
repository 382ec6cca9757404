/** The service's client: encode, score, extract, the catalog and `/v1/embeddings`. */
import { VERSION } from "@svc/shared/version";
import { abortableSleep, Transport } from "./transport.ts";
import { DEFAULT_RETRY, type RetryPolicy } from "./retry.ts";
import { shapeEmbeddingsAnswer, shapeEncodeAnswer, type WireFormat } from "./wire.ts";
import type {
  EmbeddingsRequest,
  EmbeddingsResponse,
  EncodeParams,
  EncodeResponse,
  ExtractParams,
  ExtractResponse,
  ItemInput,
  ModelInfo,
  ScoreOptions,
  ScoreResponse,
} from "./types.ts";

/** Options of {@link SvcClient}. Every one has a default. */
export interface ClientOptions {
  /** Router or worker base URL (default `http://127.0.0.1:8080`, what `npm start` serves). */
  baseUrl?: string;
  /** Sent as `Authorization: Bearer <key>` (the router's `SVC_API_KEYS`). */
  apiKey?: string;
  /** Pool to run on (`X-SVC-MACHINE-PROFILE`); unset uses the router's default pool. */
  machineProfile?: string;
  /** `msgpack` (default: vectors travel as raw bytes) or `json`. Results look the same. */
  format?: WireFormat;
  /** Bound on one HTTP attempt, answer body included (default 120 s). */
  timeoutMs?: number;
  /**
   * Waits and retries: a pool with no worker is waited for 60 s (`provisionWaitMs`), a call as a
   * whole for at most 5 minutes (`budgetMs`).
   */
  retry?: Partial<RetryPolicy>;
  /** Where the version-skew warning goes (default `console.warn`); given at most once. */
  onWarning?: (message: string) => void;
  /** A fetch of your own (proxies, instrumentation). */
  fetch?: typeof fetch;
  /** The client release compared with the server's (default: this package's version). */
  clientVersion?: string;
  /** Test seams: how the client sleeps, draws jitter and reads the clock. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  now?: () => number;
}

/** Options of one call. */
export interface CallOptions {
  /** Abort the call (waits included): it then fails with code `ABORTED`. */
  signal?: AbortSignal;
}

/** Model names carry `/` and `:`; one path segment, percent-encoded. */
function modelPath(op: string, model: string): string {
  return `/v1/${op}/${encodeURIComponent(model)}`;
}

/** Items as the API wants them: a bare string is `{text}`. */
function items(list: readonly ItemInput[]): unknown[] {
  return list.map((i) => (typeof i === "string" ? { text: i } : i));
}

/** A client of one router (or worker). Safe to share; calls run concurrently. */
export class SvcClient {
  readonly #t: Transport;

  constructor(options: ClientOptions = {}) {
    this.#t = new Transport({
      baseUrl: (options.baseUrl ?? "http://127.0.0.1:8080").replace(/\/+$/, ""),
      apiKey: options.apiKey,
      machineProfile: options.machineProfile,
      format: options.format ?? "msgpack",
      timeoutMs: options.timeoutMs ?? 120_000,
      retry: { ...DEFAULT_RETRY, ...options.retry },
      clientVersion: options.clientVersion ?? VERSION,
      warn: options.onWarning ?? ((m) => console.warn(`svc client: ${m}`)),
      fetch: options.fetch ?? ((input, init) => fetch(input, init)),
      sleep: options.sleep ?? abortableSleep,
      random: options.random ?? Math.random,
      now: options.now ?? (() => Date.now()),
    });
  }

  /** The server version seen on the latest answer (null before the first call). */
  get serverVersion(): string | null {
    return this.#t.serverVersion;
  }

  /** Embeddings of `input` items (dense, sparse and/or multi-vector, as typed arrays). */
  async encode(
    model: string,
    input: readonly ItemInput[],
    params?: EncodeParams,
    opts: CallOptions = {},
  ): Promise<EncodeResponse> {
    const body = await this.#t.call({
      method: "POST",
      path: modelPath("encode", model),
      body: { items: items(input), ...(params ? { params } : {}) },
      signal: opts.signal,
    });
    return shapeEncodeAnswer(body) as EncodeResponse;
  }

  /** Rank `input` items against `query` (best first). */
  async score(
    model: string,
    query: ItemInput,
    input: readonly ItemInput[],
    options: ScoreOptions = {},
    opts: CallOptions = {},
  ): Promise<ScoreResponse> {
    const [q] = items([query]);
    return await this.#t.call({
      method: "POST",
      path: modelPath("score", model),
      body: { query: q, items: items(input), ...options },
      signal: opts.signal,
    }) as ScoreResponse;
  }

  /** Entities, relations, classifications, objects or structured data from `input` items. */
  async extract(
    model: string,
    input: readonly ItemInput[],
    params?: ExtractParams,
    opts: CallOptions = {},
  ): Promise<ExtractResponse> {
    return await this.#t.call({
      method: "POST",
      path: modelPath("extract", model),
      body: { items: items(input), ...(params ? { params } : {}) },
      signal: opts.signal,
    }) as ExtractResponse;
  }

  /** The catalog with live states (never loads a model). */
  async listModels(opts: CallOptions = {}): Promise<ModelInfo[]> {
    const body = await this.#t.call({
      method: "GET",
      path: "/v1/models",
      json: true,
      signal: opts.signal,
    }) as { models: ModelInfo[] };
    return body.models;
  }

  /** One model's entry (an SvcError `MODEL_NOT_FOUND` when there is none). */
  async getModel(model: string, opts: CallOptions = {}): Promise<ModelInfo> {
    return await this.#t.call({
      method: "GET",
      path: `/v1/models/${encodeURIComponent(model)}`,
      json: true,
      signal: opts.signal,
    }) as ModelInfo;
  }

  /** OpenAI-compatible embeddings (float format), each as a Float32Array. */
  async embeddings(req: EmbeddingsRequest, opts: CallOptions = {}): Promise<EmbeddingsResponse> {
    const body = await this.#t.call({
      method: "POST",
      path: "/v1/embeddings",
      body: { ...req, encoding_format: "float" },
      json: true,
      signal: opts.signal,
    });
    return shapeEmbeddingsAnswer(body) as EmbeddingsResponse;
  }
}
