/**
 * Answers whose bytes the server can write without reading the `Response` back. Reading a
 * Response's body is an async stream read per answer; an answer built here remembers its bytes,
 * and the node:http server (shared/http/node_server.ts) writes those directly. Any other Response
 * (a proxied one, one rebuilt by middleware) is read as usual.
 */

const known = new WeakMap<Response, Uint8Array>();

/**
 * A Response over `bytes` that the server can write without reading it back. The bytes are
 * written as they are (the Response's own copy is not used): they must not change afterwards,
 * so pass a buffer of the answer's own, never a reused scratch buffer.
 */
export function bytesResponse(bytes: Uint8Array, init: ResponseInit): Response {
  const res = new Response(bytes as Uint8Array<ArrayBuffer>, init);
  known.set(res, bytes);
  return res;
}

/** The bytes `res` was built from by {@link bytesResponse}, if it was. */
export function answerBytesOf(res: Response): Uint8Array | undefined {
  return known.get(res);
}
