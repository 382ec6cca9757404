/**
 * Entity offsets on the wire are Unicode code points (what Python's `str` indexes, which is what
 * the existing clients slice with); adapters work in JavaScript string indices (UTF-16 units).
 */

/** A converter from UTF-16 offsets of `text` to code-point offsets. */
export function codePointIndex(text: string): (utf16: number) => number {
  // Without surrogates both counts agree: skip the table.
  if (!/[\uD800-\uDFFF]/.test(text)) return (i) => i;
  const table = new Uint32Array(text.length + 1);
  let points = 0;
  for (let i = 0; i < text.length; i++) {
    table[i] = points;
    const c = text.charCodeAt(i);
    // The low half of a pair belongs to the code point its high half started.
    const highThenLow = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length &&
      (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    if (highThenLow) table[++i] = points;
    points++;
  }
  table[text.length] = points;
  return (i) => table[i];
}

/** An entity with UTF-16 offsets into `text`, re-expressed in code points. */
export function withCodePointOffsets<E extends { start: number; end: number }>(
  text: string,
  entities: readonly E[],
): E[] {
  const at = codePointIndex(text);
  return entities.map((e) => ({ ...e, start: at(e.start), end: at(e.end) }));
}
