/** Forwarding API requests to workers: selection, retry, header policy, cancellation, transport. */
export { forward, type ForwardResult, type ProxyDeps } from "./forward.ts";
export { downstreamHeaders, upstreamHeaders } from "./headers.ts";
export { type CancelCause, UpstreamCancel } from "./cancel.ts";
export { sendUpstream, type UpstreamOutcome, type UpstreamRequest } from "./upstream.ts";
