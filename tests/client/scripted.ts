/**
 * A scripted HTTP server for the client's tests: answers requests in order from a list, records
 * what it received. Binds 127.0.0.1 on a free port; `close()` stops it.
 */

/** One scripted answer. */
export interface Scripted {
  status: number;
  body?: string | Uint8Array;
  headers?: Record<string, string>;
}

/** What the server saw of one request. */
export interface Received {
  method: string;
  path: string;
  headers: Headers;
  body: Uint8Array;
}

/** A running scripted server. */
export interface ScriptedServer {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/** An error answer in the API's shape. */
export function apiError(
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
  extra: Record<string, unknown> = {},
): Scripted {
  return {
    status,
    body: JSON.stringify({ detail: { ...extra, code, message } }),
    headers: { "content-type": "application/json", ...headers },
  };
}

/** A JSON answer. */
export function jsonAnswer(body: unknown, headers: Record<string, string> = {}): Scripted {
  return {
    status: 200,
    body: JSON.stringify(body),
    headers: { "content-type": "application/json", ...headers },
  };
}

/** Serve `script` in order; requests beyond it get a 500 naming the overrun. */
export function scriptedServer(script: Scripted[]): ScriptedServer {
  const received: Received[] = [];
  let next = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      const url = new URL(req.url);
      received.push({
        method: req.method,
        path: url.pathname,
        headers: req.headers,
        body: new Uint8Array(await req.arrayBuffer()),
      });
      const s = script[next++] ??
        apiError(500, "INTERNAL_ERROR", `script overrun: request ${next}`);
      return new Response(s.body as BodyInit | undefined, {
        status: s.status,
        headers: s.headers,
      });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    received,
    close: () => server.shutdown(),
  };
}

/** A sleep that records what it was asked and returns at once (the client's clock seam). */
export function recordingSleep(): {
  waits: number[];
  sleep: (ms: number) => Promise<void>;
  now: () => number;
} {
  const waits: number[] = [];
  let clock = 0;
  return {
    waits,
    // Time moves only when the client sleeps: the budget is checked against these waits alone.
    sleep: (ms: number) => {
      waits.push(ms);
      clock += ms;
      return Promise.resolve();
    },
    now: () => clock,
  };
}
