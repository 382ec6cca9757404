/** Content negotiation of response bodies (docs/api.md "Content negotiation"). */

import { MediaTypes } from "../headers.ts";

/** The two wire formats. */
export type WireFormat = "msgpack" | "json";

/**
 * msgpack unless `Accept` mentions application/json and no msgpack type. A missing Accept, a wildcard
 * or anything else means msgpack, the SIE clients' default.
 */
export function negotiate(accept: string | null | undefined): WireFormat {
  if (!accept) return "msgpack";
  const a = accept.toLowerCase();
  return a.includes(MediaTypes.json) && !a.includes("msgpack") ? "json" : "msgpack";
}

/** Content-Type header value of each wire format. */
export function contentTypeOf(format: WireFormat): string {
  return format === "json" ? MediaTypes.json : MediaTypes.msgpack;
}
