/** Code-point offsets (wire rule) from UTF-16 offsets. */
import assert from "node:assert/strict";
import { codePointIndex, withCodePointOffsets } from "#worker/service/extract/offsets.ts";

Deno.test("codePointIndex: every UTF-16 boundary maps to the count of code points before it", () => {
  const texts = ["plain ascii", "café é", "😀a😀b", "東京 and 🇫🇷", "x\ud800y", "end\ud83d"];
  for (const text of texts) {
    const at = codePointIndex(text);
    for (let i = 0; i <= text.length; i++) {
      const inPair = i > 0 && i < text.length &&
        (text.charCodeAt(i - 1) & 0xfc00) === 0xd800 && (text.charCodeAt(i) & 0xfc00) === 0xdc00;
      if (inPair) continue; // not a boundary
      assert.equal(at(i), Array.from(text.slice(0, i)).length, `${JSON.stringify(text)} @ ${i}`);
    }
  }
});

Deno.test("withCodePointOffsets: the entity text is the code-point slice", () => {
  const text = "🎉🎉 Zoë met Bob";
  const utf16 = [{ text: "Bob", label: "person", score: 0.9, start: 13, end: 16 }];
  assert.equal(text.slice(13, 16), "Bob");
  const [e] = withCodePointOffsets(text, utf16);
  assert.deepEqual([e.start, e.end], [11, 14]);
  assert.equal(Array.from(text).slice(e.start, e.end).join(""), "Bob");
});
