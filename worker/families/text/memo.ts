/** Single-entry memo: batches repeat one value (a score query, a label set) across their items. */

/** Wrap `fn` so that calling it again with the same key returns the previous result. */
export function memoLast<V>(fn: (key: string) => V): (key: string) => V {
  let lastKey: string | undefined;
  let lastValue: V;
  return (key) => {
    if (key !== lastKey) {
      lastValue = fn(key);
      lastKey = key;
    }
    return lastValue;
  };
}
