/** Forwarding API requests to workers: selection, retry, header policy, cancellation, transport. */
export {
  type AnswerShaper,
  downstreamResponse,
  forward,
  type ForwardResult,
  type ProxyDeps,
  type WorkerAnswer,
} from "./forward.ts";
export { downstreamHeaderPairs, downstreamHeaders, upstreamHeaders } from "./headers.ts";
export { type CancelCause, UpstreamCancel } from "./cancel.ts";
export { sendUpstream, type UpstreamOutcome, type UpstreamRequest } from "./upstream.ts";
