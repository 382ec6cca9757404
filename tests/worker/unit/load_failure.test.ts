/**
 * The class of a failed load when its files came from a source that could not prove them
 * complete (issue 23.5): files that do not load are then `unverified` and transient, retried after
 * the cool-down, where the same failure on checked files is `incompatible` and lasts until the
 * caches change.
 */
import assert from "node:assert/strict";
import { failureRemembered, loadFailure } from "#worker/registry/load_failure.ts";
import { IncompatibleModelError } from "#worker/registry/runner.ts";

const COOLDOWN = 1000;
/** The caches never change in these cases. */
const sameStamp = () => Promise.resolve("stamp");

Deno.test("load failure: a graph that does not load from an unchecked copy is unverified and transient", async () => {
  const cause = new IncompatibleModelError("onnx/model.onnx is not a valid ONNX graph");
  const checked = loadFailure("org/m", cause, 1, 0);
  checked.stamp = "stamp";
  assert.equal(checked.errorClass, "incompatible");
  assert.equal(checked.permanent, true);
  assert.equal(await failureRemembered(checked, COOLDOWN + 1, COOLDOWN, sameStamp), true);

  const unchecked = loadFailure("org/m", cause, 1, 0, ["onnx/model.onnx"]);
  assert.equal(unchecked.errorClass, "unverified");
  assert.equal(unchecked.permanent, false);
  assert.deepEqual(unchecked.answer.extra, {
    error_class: "unverified",
    attempts: 1,
    permanent: false,
  });
  assert.match(
    unchecked.lastError.message,
    /not a valid ONNX graph \(onnx\/model\.onnx came from a source that stated neither size nor hash/,
  );
  assert.equal(await failureRemembered(unchecked, COOLDOWN - 1, COOLDOWN, sameStamp), true);
  assert.equal(await failureRemembered(unchecked, COOLDOWN + 1, COOLDOWN, sameStamp), false);
});

Deno.test("load failure: unchecked copies do not change other classes", () => {
  const other = loadFailure("org/m", new Error("thread crashed"), 1, 0, ["onnx/model.onnx"]);
  assert.equal(other.errorClass, "internal");
  assert.doesNotMatch(other.lastError.message, /stated neither size nor hash/);
});
