/** Negotiated answers: msgpack by default, JSON when the client asks for it. */
import { encodeResponse } from "@svc/shared/codec/encode";
import type { DirectAnswer } from "@svc/shared/http/direct_call";

const utf8 = new TextEncoder();

/** Encode `value` for the request's Accept header, as a whole answer. */
export function negotiatedAnswer(
  accept: string | undefined,
  value: unknown,
  status: number,
  headers: Record<string, string>,
): DirectAnswer {
  const { body, contentType } = encodeResponse(value, accept ?? null);
  const bytes = typeof body === "string" ? utf8.encode(body) : body;
  return { status, headers: { ...headers, "content-type": contentType }, body: bytes };
}

/** `value` as a JSON answer (the OpenAI-compatible route answers JSON whatever it is asked). */
export function jsonAnswer(value: unknown, headers: Record<string, string>): DirectAnswer {
  return {
    status: 200,
    headers: { ...headers, "content-type": "application/json" },
    body: utf8.encode(JSON.stringify(value)),
  };
}
