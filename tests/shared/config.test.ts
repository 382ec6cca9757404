/** Shared settings fields: spellings, bounds, secrets, typo suggestions, the generated reference. */
import assert from "node:assert/strict";
import {
  bool,
  closestName,
  ConfigError,
  decimal,
  editDistance,
  int,
  list,
  markdownTable,
  oneOf,
  secret,
  settingsSchema,
  settingsTable,
  slug,
  str,
  unknownSettings,
  url,
  withReference,
} from "@svc/shared/config";

const schema = settingsSchema({
  SVC_N: int({ min: 1, max: 10, default: 3, doc: "n" }),
  SVC_F: decimal({ min: 0, max: 1, default: 0.5, doc: "f" }),
  SVC_B: bool({ default: false, doc: "b" }),
  SVC_E: oneOf(["a", "b"], { default: "a", doc: "e" }),
  SVC_S: slug({ default: undefined, doc: "s" }),
  SVC_L: list({ doc: "l" }),
  SVC_U: url({ default: undefined, doc: "u" }),
  SVC_K: secret({
    doc: "k",
    check: (v) => v.length < 8 ? "must be 8 characters or more" : undefined,
  }),
  SVC_P: str({ default: "x", pattern: /^[a-z]+$/, patternName: "lower-case letters", doc: "p" }),
}, (v, issue) => {
  if (v.SVC_N > 5 && v.SVC_B) issue("SVC_N", "must be at most 5 when SVC_B is set");
});

/** The ConfigError `fn` throws. */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e;
  }
  assert.fail("no error");
}

Deno.test("config fields: defaults, trimming, empty means unset", () => {
  assert.deepEqual(schema.load({ SVC_N: "  ", SVC_L: "" }), {
    SVC_N: 3,
    SVC_F: 0.5,
    SVC_B: false,
    SVC_E: "a",
    SVC_S: undefined,
    SVC_L: [],
    SVC_U: undefined,
    SVC_K: undefined,
    SVC_P: "x",
  });
  const v = schema.load({
    SVC_N: " 4 ",
    SVC_F: ".25",
    SVC_B: "Yes",
    SVC_E: "b",
    SVC_S: "L4",
    SVC_L: "a, b,,c ",
    SVC_U: "https://h.example/x",
    SVC_K: "long-enough",
  });
  assert.equal(v.SVC_N, 4);
  assert.equal(v.SVC_F, 0.25);
  assert.equal(v.SVC_B, true);
  assert.equal(v.SVC_S, "l4");
  assert.deepEqual(v.SVC_L, ["a", "b", "c"]);
  assert.deepEqual(schema.secretsOf(v), ["long-enough"]);
});

Deno.test("config fields: every bad variable is named, secrets and URLs never quoted", () => {
  const e = configError(() =>
    schema.load({
      SVC_N: "1e3",
      SVC_F: "2",
      SVC_B: "maybe",
      SVC_E: "c",
      SVC_S: "a b",
      SVC_U: "ftp://user:pw@h",
      SVC_K: "short",
      SVC_P: "ABC",
    })
  );
  assert.deepEqual(e.issues.map((i) => i.name), [
    "SVC_N",
    "SVC_F",
    "SVC_B",
    "SVC_E",
    "SVC_S",
    "SVC_U",
    "SVC_K",
    "SVC_P",
  ]);
  assert.match(e.message, /^SVC_N must be an integer from 1 to 10, got "1e3"; /);
  assert.match(e.message, /SVC_B must be 1\/true\/yes\/on or 0\/false\/no\/off, got "maybe"/);
  assert.match(e.message, /SVC_P must be lower-case letters, got "ABC"/);
  assert.ok(!e.message.includes("short") && !e.message.includes("pw@"), e.message);
});

Deno.test("config fields: cross checks run on parsed values only", () => {
  assert.equal(schema.load({ SVC_N: "7" }).SVC_N, 7);
  const e = configError(() => schema.load({ SVC_N: "7", SVC_B: "1" }));
  assert.deepEqual(e.issues, [{ name: "SVC_N", message: "must be at most 5 when SVC_B is set" }]);
  // A field error stops before the cross check could read a half-parsed value.
  assert.deepEqual(configError(() => schema.load({ SVC_N: "x", SVC_B: "1" })).issues.length, 1);
});

Deno.test("unknown settings: closest known name by edit distance", () => {
  assert.equal(editDistance("SVC_PROT", "SVC_PORT"), 2);
  assert.equal(editDistance("", "abc"), 3);
  assert.equal(editDistance("kitten", "sitting"), 3);
  assert.equal(closestName("SVC_HOTS", ["SVC_PORT", "SVC_HOST"]), "SVC_HOST");
  assert.deepEqual(
    unknownSettings({ SVC_PROT: "1", SVC_PORT: "2", HOME: "/h", SVC_ZZZ: "" }, ["SVC_PORT"]),
    [{ name: "SVC_PROT", closest: "SVC_PORT" }, { name: "SVC_ZZZ", closest: "SVC_PORT" }],
  );
  assert.deepEqual(unknownSettings({ SVC_X: "1" }, []), [{ name: "SVC_X", closest: undefined }]);
});

Deno.test("reference: aligned table with escaped cells, written between markers", () => {
  assert.equal(
    markdownTable(["A", "Long header"], [["x|y", "1"]]),
    "| A    | Long header |\n| ---- | ----------- |\n| x\\|y | 1           |",
  );
  const table = settingsTable(schema.fields);
  assert.match(table, /\| `SVC_N` +\| `3` +\| n +\|/);
  assert.match(table, /\| `SVC_K` +\| unset \(secret\) +\| k +\|/);
  assert.match(table, /\| `SVC_B` +\| `0` +\| b +\|/);
  const doc = "# T\n\n<!-- settings:x -->\nstale\n<!-- /settings:x -->\n\nafter\n";
  const out = withReference(doc, [{ id: "x", fields: schema.fields }]);
  assert.ok(out.startsWith("# T\n\n<!-- settings:x -->\n\n| Variable"));
  assert.ok(out.endsWith("|\n\n<!-- /settings:x -->\n\nafter\n"));
  assert.equal(withReference(out, [{ id: "x", fields: schema.fields }]), out, "idempotent");
  assert.throws(() => withReference("no markers", [{ id: "x", fields: {} }]), /settings:x/);
});
