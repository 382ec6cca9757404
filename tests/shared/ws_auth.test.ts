/** API keys of browsers' status sockets, carried as a subprotocol (shared/http/ws_auth.ts). */
import assert from "node:assert/strict";
import {
  answeredProtocol,
  keyProtocol,
  offeredProtocols,
  presentedAuthorization,
  protocolKey,
  STREAM_PROTOCOL,
} from "@svc/shared/http/ws_auth";

Deno.test("ws auth: a key survives the subprotocol round trip, whatever its characters", () => {
  for (const key of ["plain-key-0123", "with/slash+plus=eq,comma", "ключ-🔑-0123"]) {
    const p = keyProtocol(key);
    assert.match(p, /^svc\.bearer\.[A-Za-z0-9_-]+$/, "a valid subprotocol token");
    assert.equal(protocolKey(`svc.status, ${p}`), key);
  }
  assert.equal(protocolKey("svc.status"), undefined);
  assert.equal(protocolKey("svc.bearer.***"), undefined);
  assert.equal(protocolKey("svc.bearer.//8"), undefined, "not base64url");
  assert.equal(protocolKey("svc.bearer.gA"), undefined, "not UTF-8");
  assert.equal(protocolKey(null), undefined);
  assert.deepEqual(offeredProtocols(" a , b,,c "), ["a", "b", "c"]);
  // Only the stream protocol is ever answered, never the one carrying the key.
  assert.equal(answeredProtocol(["svc.bearer.abc", STREAM_PROTOCOL]), STREAM_PROTOCOL);
  assert.equal(answeredProtocol(["svc.bearer.abc"]), undefined);
});

Deno.test("ws auth: the subprotocol key counts on WebSocket upgrades only; a header wins", () => {
  const p = keyProtocol("k-0123456789");
  const upgrade = { upgrade: "websocket", "sec-websocket-protocol": `svc.status, ${p}` };
  assert.equal(presentedAuthorization(new Headers(upgrade)), "Bearer k-0123456789");
  assert.equal(
    presentedAuthorization(new Headers({ "sec-websocket-protocol": p })),
    undefined,
    "a plain request carries no key this way",
  );
  assert.equal(
    presentedAuthorization(new Headers({ ...upgrade, authorization: "Bearer other-key" })),
    "Bearer other-key",
  );
});
