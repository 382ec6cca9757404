/** Bodies that are cheap to send and costly to decode, and a timed POST of them. */

/** `{"items":[...],"params":{"options":{500,000 keys}}}` as JSON text. */
export function manyKeysJson(extra: Record<string, unknown> = {}): string {
  const keys: string[] = [];
  for (let i = 0; i < 500_000; i++) keys.push(`"option_number_${i}":1`);
  const head = JSON.stringify(extra).slice(1, -1);
  return `{${head ? head + "," : ""}"items":[{"text":"hello"}],` +
    `"params":{"options":{${keys.join(",")}}}}`;
}

/** POST `body` and read the JSON answer, with the milliseconds it took (bounded at 60 s). */
export async function post(url: string, body: BodyInit, contentType = "application/json") {
  const t0 = performance.now();
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": contentType, accept: "application/json" },
    body,
    signal: AbortSignal.timeout(60_000),
  });
  const json = await res.json();
  return { status: res.status, body: json, ms: performance.now() - t0 };
}
