/** Negotiated responses: msgpack by default, JSON when the client asks for it. */
import { encodeResponse } from "@svc/shared/codec/encode";
import { bytesResponse } from "@svc/shared/http/answer_bytes";

const utf8 = new TextEncoder();

/** Encode `value` for the request's Accept header and wrap it in a Response. */
export function sendNegotiated(
  req: Request,
  value: unknown,
  status: number,
  headers: Record<string, string>,
): Response {
  const { body, contentType } = encodeResponse(value, req.headers.get("accept"));
  const bytes = typeof body === "string" ? utf8.encode(body) : body;
  return bytesResponse(bytes, { status, headers: { ...headers, "content-type": contentType } });
}
