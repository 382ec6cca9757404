/**
 * Request steps (shared/http/steps.ts): one list, run as Hono middleware and around a direct
 * route, gives the same order, the same early answers and the same amended headers on both paths.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { ServiceError } from "@svc/shared/errors";
import { directAnswerKit } from "@svc/shared/http/direct_call";
import {
  honoRequestView,
  runSteps,
  type Step,
  stepMiddleware,
  type StepRequest,
} from "@svc/shared/http/steps";

/** Three steps that log their order; the second refuses requests without `x-pass`. */
function loggedSteps(log: string[]): Step[] {
  const tag = (name: string): Step => async (_req, kit, next) => {
    log.push(`${name} in`);
    const answer = await next();
    log.push(`${name} out`);
    return kit.withHeaders(answer, { [`x-${name}`]: "1" });
  };
  const gate: Step = async (req, kit, next) => {
    log.push("gate in");
    if (req.header("x-pass") === undefined) {
      return kit.error(new ServiceError("UNAUTHORIZED", "no x-pass"));
    }
    const answer = await next();
    log.push("gate out");
    return answer;
  };
  return [tag("first"), gate, tag("last")];
}

/** Status, the steps' headers and the order, through a Hono app. */
async function viaHono(headers: Record<string, string>) {
  const log: string[] = [];
  const app = new Hono();
  for (const step of loggedSteps(log)) {
    app.use("*", stepMiddleware(step, honoRequestView, () => "openai"));
  }
  app.post("/v1/embeddings", () => {
    log.push("route");
    return new Response("ok");
  });
  const res = await app.request("/v1/embeddings", { method: "POST", headers });
  return {
    status: res.status,
    first: res.headers.get("x-first"),
    last: res.headers.get("x-last"),
    body: await res.text(),
    log,
  };
}

/** The same, around a direct route. */
async function viaDirect(headers: Record<string, string>) {
  const log: string[] = [];
  const req: StepRequest = {
    method: "POST",
    path: "/v1/embeddings",
    header: (name) => headers[name],
  };
  const answer = await runSteps(loggedSteps(log), req, directAnswerKit("openai"), () => {
    log.push("route");
    return Promise.resolve({ status: 200, headers: {}, body: new TextEncoder().encode("ok") });
  });
  return {
    status: answer.status,
    first: answer.headers["x-first"] ?? null,
    last: answer.headers["x-last"] ?? null,
    body: new TextDecoder().decode(answer.body),
    log,
  };
}

Deno.test("steps: the same order and headers as Hono middleware and around a direct route", async () => {
  const hono = await viaHono({ "x-pass": "1" });
  const direct = await viaDirect({ "x-pass": "1" });
  assert.deepEqual(hono.log, [
    "first in",
    "gate in",
    "last in",
    "route",
    "last out",
    "gate out",
    "first out",
  ]);
  assert.deepEqual(direct, hono);
  assert.equal(direct.first, "1");
  assert.equal(direct.last, "1");
});

Deno.test("steps: an early answer stops the later steps and the route, in the path's envelope", async () => {
  const hono = await viaHono({});
  const direct = await viaDirect({});
  assert.deepEqual(hono.log, ["first in", "gate in", "first out"]);
  assert.equal(hono.status, 401);
  assert.equal(hono.first, "1", "the outer step still amends the early answer");
  assert.equal(hono.last, null);
  assert.deepEqual(JSON.parse(hono.body).error.message, "no x-pass", "OpenAI's envelope");
  assert.deepEqual(direct, hono);
});

Deno.test("steps: a direct answer's afterWrite runs what each step deferred, in order", () => {
  const kit = directAnswerKit("native");
  const ran: string[] = [];
  const base = { status: 200, headers: { "X-Trace-ID": "t-1" }, body: new Uint8Array() };
  const once = kit.afterWrite(base, () => ran.push("a"));
  const twice = kit.afterWrite(once, () => ran.push("b"));
  twice.afterWrite!();
  assert.deepEqual(ran, ["a", "b"]);
  assert.equal(kit.header(base, "x-trace-id"), "t-1", "names in any case");
  assert.equal(kit.header(base, "X-Trace-ID"), "t-1");
});
