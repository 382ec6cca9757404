/**
 * The client's retry rules against a scripted server on 127.0.0.1, on a recorded clock: 202
 * polled with growing delays inside the budget, 503 + Retry-After waited as told (bounded), 503
 * without it and every 4xx / 502 MODEL_LOAD_FAILED raised at once with code and message,
 * connection failures retried with capped, jittered backoff, one version-skew warning.
 */
import assert from "node:assert/strict";
import { SvcClient, SvcError } from "@svc/client";
import {
  connectDelayMs,
  DEFAULT_RETRY,
  parseRetryAfter,
  provisionDelayMs,
  versionSkew,
} from "#client/retry.ts";
import { VERSION } from "@svc/shared/version";
import { waitFor } from "../helpers/wait.ts";
import { apiError, jsonAnswer, recordingSleep, type Scripted, scriptedServer } from "./scripted.ts";

const PROVISIONING: Scripted = {
  status: 202,
  body: JSON.stringify({ status: "provisioning", message: "no worker of pool cpu yet" }),
  headers: { "content-type": "application/json", "retry-after": "1" },
};
const SCORED = jsonAnswer({ model: "m", query_id: null, scores: [] }, {
  "x-svc-server-version": VERSION,
});

/** Run `fn` with a client on a scripted server and a recorded clock. */
async function withScript(
  script: Scripted[],
  fn: (
    client: SvcClient,
    ctx: { waits: number[]; received: { path: string; headers: Headers }[] },
  ) => Promise<void>,
  opts: ConstructorParameters<typeof SvcClient>[0] = {},
): Promise<void> {
  const server = scriptedServer(script);
  const clock = recordingSleep();
  try {
    const client = new SvcClient({
      baseUrl: server.url,
      format: "json",
      sleep: clock.sleep,
      now: clock.now,
      random: () => 0.5,
      ...opts,
    });
    await fn(client, { waits: clock.waits, received: server.received });
  } finally {
    await server.close();
  }
}

/** The SvcError `p` rejects with (it must reject). */
async function rejection(p: Promise<unknown>): Promise<SvcError> {
  const err = await p.then(() => assert.fail("expected an SvcError"), (e) => e);
  assert.ok(err instanceof SvcError, String(err));
  return err;
}

Deno.test("client retry rules: delays", () => {
  const p = DEFAULT_RETRY;
  // Retry-After is the floor; the client's own backoff grows by 1.5 and is capped at 30 s.
  assert.deepEqual([0, 1, 2, 3].map((n) => provisionDelayMs(p, n, 1)), [1000, 1500, 2250, 3375]);
  assert.equal(provisionDelayMs(p, 0, 10), 10_000);
  assert.equal(provisionDelayMs(p, 20, 1), 30_000);
  // Full jitter below a capped exponential ceiling.
  assert.deepEqual([0, 1, 2].map((n) => connectDelayMs(p, n, () => 0.5)), [125, 250, 500]);
  assert.equal(connectDelayMs(p, 30, () => 0.999), 9990);
  assert.equal(connectDelayMs(p, 3, () => 0), 0);
  assert.equal(parseRetryAfter("5"), 5);
  assert.equal(parseRetryAfter(null), undefined);
  assert.equal(parseRetryAfter("soon"), undefined);
  assert.equal(parseRetryAfter(new Date(61_000).toUTCString(), 1_000), 60);
  assert.equal(versionSkew("0.1.0", "0.1.7"), false);
  assert.equal(versionSkew("0.1.0", "0.2.0"), true);
  assert.equal(versionSkew("1.1.0", "0.1.0"), true);
});

Deno.test("client: 202 is polled with growing delays until the answer comes", async () => {
  await withScript([PROVISIONING, PROVISIONING, PROVISIONING, SCORED], async (client, ctx) => {
    const res = await client.score("m", "q", ["a"]);
    assert.equal(res.model, "m");
    assert.deepEqual(ctx.waits, [1000, 1500, 2250]);
    assert.equal(ctx.received.length, 4);
  });
});

Deno.test("client: a pool that never comes ends at the retry budget", async () => {
  const script = Array.from({ length: 50 }, () => PROVISIONING);
  await withScript(script, async (client, ctx) => {
    const err = await rejection(client.score("m", "q", ["a"]));
    assert.equal(err.code, "RETRY_BUDGET_EXHAUSTED");
    assert.match(
      err.message,
      /^POST \/v1\/score\/m: gave up after .*retry budget 10000 ms.*no worker of pool cpu yet/,
    );
    // 1000 + 1500 + 2250 + 3375 = 8125, then the last wait is cut to the 1875 ms left.
    assert.deepEqual(ctx.waits, [1000, 1500, 2250, 3375, 1875]);
    assert.equal(ctx.received.length, 6);
  }, { retry: { budgetMs: 10_000 } });
});

Deno.test("client: by default a pool with no worker is waited for 60 s, and the error says how long and for what", async () => {
  const pool: Scripted = {
    status: 202,
    body: JSON.stringify({
      status: "provisioning",
      machine_profile: "l4",
      bundle: "default",
      message: 'no worker of pool "l4" serves bundle "default" yet',
    }),
    headers: { "content-type": "application/json", "retry-after": "10" },
  };
  await withScript(Array.from({ length: 50 }, () => pool), async (client, ctx) => {
    const err = await rejection(client.encode("org/m", ["a"]));
    assert.equal(err.code, "NO_CAPACITY");
    assert.equal(err.status, 202);
    assert.match(
      err.message,
      /^POST \/v1\/encode\/org%2Fm: no worker to serve it after waiting 60\.0 s/,
    );
    assert.match(err.message, /retry\.provisionWaitMs 60000 ms/);
    assert.match(err.message, /pool "l4" \(bundle "default"\)/);
    // Retry-After 10 s is the floor of each poll; the last look comes exactly at 60 s.
    assert.deepEqual(ctx.waits, [10_000, 10_000, 10_000, 10_000, 10_000, 10_000]);
    assert.equal(ctx.received.length, 7);
  });
  // A pool that comes within the wait is served; a longer wait is one option.
  await withScript([pool, pool, pool, SCORED], async (client) => {
    assert.equal((await client.score("m", "q", ["a"])).model, "m");
  }, { retry: { provisionWaitMs: 30_000 } });
  // The router's /v1/embeddings says the same with 503 NO_CAPACITY: it counts too.
  const full = apiError(503, "NO_CAPACITY", "no worker within 30000 ms", { "retry-after": "10" });
  await withScript([full, full, full, full], async (client, ctx) => {
    const err = await rejection(client.embeddings({ model: "m", input: ["a"] }));
    assert.equal(err.code, "NO_CAPACITY");
    assert.match(err.message, /after waiting 20\.0 s .*no worker within 30000 ms/);
    assert.deepEqual(ctx.waits, [10_000, 10_000]);
  }, { retry: { provisionWaitMs: 20_000 } });
});

Deno.test("client: 503 with Retry-After is waited as told, and bounded", async () => {
  const script = [
    apiError(503, "MODEL_LOADING", "loading", { "retry-after": "5" }),
    apiError(503, "LORA_LOADING", "adapter loading", { "retry-after": "2" }),
    apiError(503, "QUEUE_FULL", "full", { "retry-after": "600" }),
    apiError(503, "SHUTTING_DOWN", "draining", { "retry-after": "5" }),
    SCORED,
  ];
  await withScript(script, async (client, ctx) => {
    await client.score("m", "q", ["a"]);
    // 600 s is cut to maxRetryAfterMs (60 s).
    assert.deepEqual(ctx.waits, [5000, 2000, 60_000, 5000]);
  });
});

Deno.test("client: errors that must not be retried are raised at once with code and message", async () => {
  const cases: [Scripted, string, number][] = [
    [
      apiError(502, "MODEL_LOAD_FAILED", "weights not found", {}, {
        permanent: true,
        attempts: 1,
      }),
      "MODEL_LOAD_FAILED",
      502,
    ],
    [apiError(404, "MODEL_NOT_FOUND", "no such model"), "MODEL_NOT_FOUND", 404],
    [apiError(400, "INVALID_INPUT", "items: must not be empty"), "INVALID_INPUT", 400],
    [apiError(401, "UNAUTHORIZED", "a valid API key is required"), "UNAUTHORIZED", 401],
    [apiError(503, "NO_CAPACITY", "no Retry-After: not retried"), "NO_CAPACITY", 503],
    [apiError(500, "INFERENCE_ERROR", "the model failed"), "INFERENCE_ERROR", 500],
    [{ status: 502, body: "<html>bad gateway</html>" }, "HTTP_502", 502],
  ];
  for (const [answer, code, status] of cases) {
    await withScript([answer, SCORED], async (client, ctx) => {
      const err = await rejection(client.score("m", "q", ["a"]));
      assert.equal(err.code, code);
      assert.equal(err.status, status);
      assert.ok(err.message.length > 0);
      assert.deepEqual(ctx.waits, [], `${code}: no wait`);
      assert.equal(ctx.received.length, 1, `${code}: one request`);
      if (code === "MODEL_LOAD_FAILED") assert.equal(err.detail.permanent, true);
    });
  }
});

Deno.test("client: connection failures are retried with capped, jittered backoff", async () => {
  let failuresLeft = 3;
  const flaky: typeof fetch = (input, init) => {
    if (failuresLeft-- > 0) return Promise.reject(new TypeError("connection refused"));
    return fetch(input, init);
  };
  await withScript([SCORED], async (client, ctx) => {
    await client.score("m", "q", ["a"]);
    assert.deepEqual(ctx.waits, [125, 250, 500]);
    assert.equal(ctx.received.length, 1);
  }, { fetch: flaky });

  const down: typeof fetch = () => Promise.reject(new TypeError("connection refused"));
  await withScript([], async (client, ctx) => {
    const err = await rejection(client.listModels());
    assert.equal(err.code, "CONNECTION_FAILED");
    assert.equal(err.status, 0);
    // 4 attempts, 3 waits: ceilings 250, then 500 and 1000 both capped at 400 ms (half drawn).
    assert.deepEqual(ctx.waits, [125, 200, 200]);
  }, { fetch: down, retry: { connectAttempts: 4, connectMaxDelayMs: 400 } });
});

Deno.test("client: one warning when the server's major.minor differs", async () => {
  const other = (v: string, sie = false) =>
    jsonAnswer({ model: "m", query_id: null, scores: [] }, {
      [sie ? "x-sie-server-version" : "x-svc-server-version"]: v,
    });
  const warnings: string[] = [];
  await withScript([other("9.9.0"), other("9.9.1"), other("9.8.0")], async (client) => {
    for (let i = 0; i < 3; i++) await client.score("m", "q", ["a"]);
    assert.equal(client.serverVersion, "9.8.0");
  }, { onWarning: (m) => warnings.push(m) });
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0],
    new RegExp(`server version 9\\.9\\.0 differs from client version ${VERSION}`),
  );

  const none: string[] = [];
  const [maj, min] = VERSION.split(".");
  await withScript([other(`${maj}.${min}.99`, true)], async (client) => {
    await client.score("m", "q", ["a"]);
  }, { onWarning: (m) => none.push(m) });
  assert.deepEqual(none, [], "a patch difference is no skew (SIE header name read too)");
});

Deno.test("client: headers and request bodies in both formats", async () => {
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 255]);
  for (const format of ["json", "msgpack"] as const) {
    await withScript([SCORED, SCORED], async (client, ctx) => {
      await client.score("org/name:profile", "q?", ["a", { id: "b", images: [{ data: png }] }]);
      const r = ctx.received[0] as { path: string; headers: Headers; body: Uint8Array };
      assert.equal(r.path, "/v1/score/org%2Fname%3Aprofile");
      assert.equal(r.headers.get("authorization"), "Bearer k-123");
      assert.equal(r.headers.get("x-svc-machine-profile"), "l4");
      const type = format === "json" ? "application/json" : "application/msgpack";
      assert.equal(r.headers.get("content-type"), type);
      assert.equal(r.headers.get("accept"), type);
      const { decodeBody } = await import("@svc/shared/codec/decode");
      const body = decodeBody(r.body, type) as Record<string, unknown>;
      assert.deepEqual(body.query, { text: "q?" });
      const items = body.items as Record<string, unknown>[];
      assert.deepEqual(items[0], { text: "a" });
      const image = (items[1].images as { data: unknown }[])[0].data;
      // msgpack sends the bytes as bin, JSON as base64 (what the server's schema accepts).
      if (format === "json") assert.equal(image, btoa(String.fromCharCode(...png)));
      else assert.deepEqual(new Uint8Array(image as Uint8Array), png);
      // The catalog is always asked for in JSON.
      await client.listModels().catch(() => {});
      assert.equal(ctx.received[1].headers.get("accept"), "application/json");
    }, { format, apiKey: "k-123", machineProfile: "l4" });
  }
});

Deno.test("client: an attempt that gets no answer times out", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  try {
    const client = new SvcClient({
      baseUrl: `http://127.0.0.1:${listener.addr.port}`,
      timeoutMs: 300,
    });
    const err = await rejection(client.listModels());
    assert.equal(err.code, "TIMEOUT");
    assert.match(err.message, /300 ms/);
  } finally {
    listener.close();
    await accepting.catch(() => {});
    for (const c of held) c.close();
  }
});

Deno.test("client: the caller's signal aborts a wait", async () => {
  const server = scriptedServer([{ ...PROVISIONING, headers: { "retry-after": "60" } }]);
  try {
    const client = new SvcClient({ baseUrl: server.url });
    const ac = new AbortController();
    const call = client.score("m", "q", ["a"], {}, { signal: ac.signal });
    await waitFor(() => server.received.length > 0, "the first request");
    ac.abort();
    const err = await rejection(call);
    assert.equal(err.code, "ABORTED");
  } finally {
    await server.close();
  }
});
