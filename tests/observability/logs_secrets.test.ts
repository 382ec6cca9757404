/** Log lines in text and JSON: every secret a setting names is redacted, whatever carries it. */
import assert from "node:assert/strict";
import { createLogger } from "@svc/shared/log";
import { loadWorkerSettings } from "@svc/worker/settings";
import { loadRouterSettings } from "@svc/router/settings";
import { FLEET_TOKEN } from "./helpers/process.ts";
import { API_KEYS, HF_TOKEN, SECRETS } from "./helpers/secrets.ts";

Deno.test("logs: text and JSON formats redact every configured secret", () => {
  const env = {
    HF_TOKEN,
    SVC_WORKER_TOKEN: FLEET_TOKEN,
    SVC_API_KEYS: ` ${API_KEYS[0]} ,${API_KEYS[1]}`,
  };
  for (const json of [false, true]) {
    const out: string[] = [];
    const log = createLogger({
      json,
      level: "info",
      component: "worker",
      // One output for both processes (`deno task start`): the secrets of either are redacted.
      secrets: [...loadWorkerSettings(env).secrets, ...loadRouterSettings(env).secrets],
      write: (l) => out.push(l),
    });
    log("info", `hub said no to ${HF_TOKEN}`, {
      error: `GET failed with Authorization: Bearer ${HF_TOKEN}`,
      nested: { keys: API_KEYS, token: FLEET_TOKEN },
    });
    log("debug", "dropped below the level");
    assert.equal(out.length, 1);
    for (const s of SECRETS) assert.ok(!out[0].includes(s), `${json ? "JSON" : "text"} leaked`);
    if (json) assert.equal(JSON.parse(out[0]).msg, "hub said no to ***");
    else assert.match(out[0], / INFO worker hub said no to \*\*\* error="GET failed/);
  }
});
