/** Response encoding: value + Accept header → body and Content-Type. */

import { encodeJson } from "./json_encode.ts";
import { encodeMsgpack } from "./msgpack_encode.ts";
import { contentTypeOf, negotiate, type WireFormat } from "./negotiate.ts";

/** An encoded response body with its Content-Type. */
export interface EncodedBody {
  body: Uint8Array | string;
  contentType: string;
}

/** Encode a response in a given wire format. */
export function encodeAs(value: unknown, format: WireFormat): EncodedBody {
  return {
    body: format === "json" ? encodeJson(value) : encodeMsgpack(value),
    contentType: contentTypeOf(format),
  };
}

/** Encode a response for a request's `Accept` header (msgpack by default, JSON on request). */
export function encodeResponse(value: unknown, accept: string | null): EncodedBody {
  return encodeAs(value, negotiate(accept));
}
