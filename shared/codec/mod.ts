/** The msgpack/JSON wire codec: request decoding with limits, response encoding, vector helpers. */

export * from "./limits.ts";
export { decodeBody, isMsgpackContentType, readBodyLimited } from "./decode.ts";
export { decodeRequest, formatIssues, parseRequest } from "./parse.ts";
export { enforceLimits, formatPath } from "./limits_check.ts";
export { scanMsgpack } from "./msgpack_scan.ts";
export { scanJson } from "./json_scan.ts";
export { decodeExt78, encodeExt78 } from "./ext78.ts";
export { EXT_TYPED_ARRAY } from "./msgpack_scan.ts";
export { encodeAs, type EncodedBody, encodeResponse } from "./encode.ts";
export { contentTypeOf, negotiate, type WireFormat } from "./negotiate.ts";
export { encodeMsgpack, MsgpackExt } from "./msgpack_encode.ts";
export { encodeJson, toPlainJson } from "./json_encode.ts";
export * from "./ndarray.ts";
export * from "./float16.ts";
export * from "./base64.ts";
export * from "./output_dtype.ts";
