import assert from "node:assert/strict";
import { bearerToken, SecretSet, timingSafeEqual } from "@svc/shared/http/secrets";

Deno.test("auth: timingSafeEqual", () => {
  const a = new Uint8Array([1, 2, 3]);
  assert.equal(timingSafeEqual(a, new Uint8Array([1, 2, 3])), true);
  assert.equal(timingSafeEqual(a, new Uint8Array([1, 2, 4])), false);
  assert.equal(timingSafeEqual(a, new Uint8Array([1, 2])), false);
});

Deno.test("auth: bearer token parsing", () => {
  assert.equal(bearerToken("Bearer abc"), "abc");
  assert.equal(bearerToken("bearer   abc  "), "abc");
  assert.equal(bearerToken("Basic abc"), undefined);
  assert.equal(bearerToken("Bearer a b"), undefined);
  assert.equal(bearerToken(null), undefined);
  assert.equal(bearerToken(""), undefined);
});

Deno.test("auth: secret sets match any configured secret, nothing when empty", async () => {
  const s = await SecretSet.create(["first-secret-1", "second-secret-2"]);
  assert.equal(s.empty, false);
  assert.equal(await s.matches("first-secret-1"), true);
  assert.equal(await s.matches("second-secret-2"), true);
  assert.equal(await s.matches("first-secret-"), false);
  assert.equal(await s.matches(""), false);
  assert.equal(await s.matches(undefined), false);
  const none = await SecretSet.create([]);
  assert.equal(none.empty, true);
  assert.equal(await none.matches("anything"), false);
});

Deno.test("auth: a secret set admits an Authorization header that presents one as a bearer token", async () => {
  const s = await SecretSet.create(["first-secret-1"]);
  assert.equal(await s.admits("Bearer first-secret-1"), true);
  assert.equal(await s.admits("bearer  first-secret-1 "), true);
  for (const refused of ["first-secret-1", "Basic first-secret-1", "Bearer other", "", null]) {
    assert.equal(await s.admits(refused), false, String(refused));
  }
  assert.equal(await s.admits(undefined), false);
});
