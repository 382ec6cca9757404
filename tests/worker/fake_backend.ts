/**
 * A fake model backend: runners answer at once (or when a test lets them), loads can be held or
 * made to fail, and everything is counted. The registry's unit tests use it to check loading and
 * eviction; the HTTP tests hand it to `createWorker` (its `backend` option) to check what the
 * surface does (validation, negotiation, methods, keys, drain) without ONNX Runtime. Whatever
 * checks model outputs runs real ONNX graphs instead (tests/fixtures).
 */
import type { ModelConfig } from "@svc/shared/catalog/schema";
import type { ModelBackend, ModelRunner, RunnerSpec } from "#worker/registry/runner.ts";
import type { ItemOutput, WorkItem, WorkParams } from "#worker/families/types.ts";
import type { Int8Verdict } from "#worker/catalog/int8.ts";

/** A promise with its settle functions. */
export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

/** A promise the test settles. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** What a fake runner answers for one item. */
export type FakeOutput = (config: ModelConfig, item: WorkItem, params: WorkParams) => ItemOutput;

/** Tokens of an item: the length of its text (so tests can predict them). */
function tokensOf(item: WorkItem): number {
  return item.text?.length ?? item.tokenIds?.length ?? 0;
}

/** The default answer: the item's token count and nothing else. */
export const tokensOnly: FakeOutput = (_config, item) => ({ tokens: tokensOf(item) });

/** A number in [0, 1) from a text, so that different items get different answers. */
function textValue(text: string, salt: number): number {
  let h = 2166136261 ^ salt;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return (h >>> 0) / 2 ** 32;
}

/**
 * An answer shaped like the model's: for encode, each output type asked for (dense vectors of the
 * model's dims, sparse and multi-vector values), a score for score, empty lists for extract.
 * Values are derived from the item's text; they mean nothing and no test should read them as
 * inference results.
 */
export const modelShaped: FakeOutput = (config, item, params) => {
  const tokens = Math.max(1, tokensOf(item));
  const text = `${item.query ?? ""}\u0000${item.text ?? item.tokenIds?.join(",") ?? ""}`;
  const out: ItemOutput = { tokens };
  const vector = (n: number, salt: number) =>
    Float32Array.from({ length: n }, (_, i) => textValue(text, salt + i) - 0.5);
  if (params.op === "score") {
    out.score = textValue(text, 1);
  } else if (params.op === "encode") {
    const wanted = params.outputs ?? config.outputs;
    if (wanted.includes("dense")) out.dense = vector(config.dims.dense ?? 8, 0);
    if (wanted.includes("sparse")) {
      out.sparse = {
        indices: Int32Array.from([1, 2]),
        values: Float32Array.from([0.5, 0.25]),
        dims: config.dims.sparse ?? 100,
      };
    }
    if (wanted.includes("multivector")) {
      const tokenDims = config.dims.multivector ?? 8;
      out.multivector = { values: vector(2 * tokenDims, 100), numTokens: 2, tokenDims };
    }
  } else {
    out.entities = [];
    out.relations = [];
    out.classifications = [];
    out.objects = [];
    if (params.fieldLabels) out.fieldSpans = params.fieldLabels.map(() => []);
  }
  return out;
};

/** A model runner that answers one output per item. */
export class FakeRunner implements ModelRunner {
  readonly batches: WorkItem[][] = [];
  /** When set, runs wait for it (a batch "on the thread"). */
  hold: Deferred | undefined;
  disposedWith: number | undefined | null = null;
  /** The load probe's verdict, when the spec asked for a probe and the backend has one set. */
  int8: Int8Verdict | undefined;
  /** Rejected on dispose: a held batch fails then, as on a thread whose model is gone. */
  readonly #gone = deferred();

  constructor(
    readonly spec: RunnerSpec,
    private readonly backend: FakeBackend,
  ) {
    this.#gone.promise.catch(() => {});
  }

  async run(items: WorkItem[], params: WorkParams) {
    this.batches.push(items);
    const hold = this.hold ?? this.backend.hold;
    if (hold) await Promise.race([hold.promise, this.#gone.promise]);
    const outputs = items.map((it) => this.backend.output(this.spec.config, it, params));
    const tokens = outputs.map((o) => o.tokens);
    return {
      outputs,
      timing: { tokenizationMs: 0, inferenceMs: 0, postprocessingMs: 0 },
      paddedTokens: items.length * Math.max(...tokens),
    };
  }

  dispose(timeoutMs?: number): Promise<void> {
    this.disposedWith = timeoutMs;
    // Like the inference thread: what was running fails once the model is gone.
    this.hold?.reject(new Error("model unloaded"));
    this.#gone.reject(new Error("model unloaded"));
    this.backend.onDispose();
    return Promise.resolve();
  }

  get disposed(): boolean {
    return this.disposedWith !== null;
  }
}

/** A backend whose loads can be held, made to fail, and counted. */
export class FakeBackend implements ModelBackend {
  readonly starts: RunnerSpec[] = [];
  readonly runners = new Map<string, FakeRunner>();
  /** When set, starts wait for it (a load in progress). */
  gate: Deferred | undefined;
  /** When set, the batches of every runner without a hold of its own wait for it. */
  hold: Deferred | undefined;
  /** Model ids whose start rejects with this error. */
  readonly failures = new Map<string, unknown>();
  /** Called when a runner is disposed (memory goes down). */
  onDispose = () => {};
  /** Load probe verdicts by model id, given to runners whose spec asks for a probe. */
  readonly int8 = new Map<string, Int8Verdict>();

  constructor(
    readonly device: "cpu" | "cuda" = "cpu",
    /** What runners answer per item (default: its token count only). */
    readonly output: FakeOutput = tokensOnly,
  ) {}

  async start(spec: RunnerSpec): Promise<ModelRunner> {
    this.starts.push(spec);
    await this.gate?.promise;
    if (this.failures.has(spec.config.id)) throw this.failures.get(spec.config.id);
    const runner = new FakeRunner(spec, this);
    if (spec.int8Probe) runner.int8 = this.int8.get(spec.config.id);
    this.runners.set(spec.config.id, runner);
    return runner;
  }
}
