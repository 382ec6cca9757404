/**
 * One model-operation request as the routes see it (encode, score, extract, embeddings): no
 * fetch `Request` and no framework context, so the hot path builds neither (see
 * shared/http/direct_call.ts for why).
 */
import type { TimingInfo } from "@svc/shared/schemas/timing";

/** What the access log and the request metrics record of a request; the routes fill it in. */
export interface RequestFacts {
  /** The served name, set once it is known to be served (metric labels stay bounded). */
  model?: string;
  /** Phase timings of an answered request. */
  phases?: TimingInfo;
  /** The LoRA adapter asked for (mapped to a bounded label when recorded). */
  lora?: string;
  /**
   * The revision of the model that ran the request's items (see worker/registry/revision.ts):
   * null when none can be named (an adapter ran, the runs disagreed, the model had none).
   */
  revision?: string | null;
  /** Tokens an extract request's items cost the model, when its cost model counted them. */
  extractTokens?: number;
}

/** A model-operation request. */
export interface ModelCall {
  /** The request URL (the model name is read from its path). */
  readonly url: string;
  /** A request header (name in any case) as `Headers.get` gives it. */
  header(name: string): string | undefined;
  /** Aborts when the client goes away. */
  readonly signal: AbortSignal;
  /** The body, read within the worker's body bounds (size, in-flight budget, idle timeout). */
  readBody(): Promise<Uint8Array<ArrayBuffer>>;
  readonly facts: RequestFacts;
}
