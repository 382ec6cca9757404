/** Splitting a long text's words into the windows the model reads one at a time. */

/** Words `[start, end)` of one window. */
export interface WordWindow {
  start: number;
  end: number;
}

/**
 * Cut words into windows of at most `maxWords` words whose sub-tokens fit in `room` tokens (a
 * word too long on its own gets a window to itself and is cut later). Consecutive windows share
 * `overlap` words (at most half a window, so every window moves forward) so that a span crossing
 * a window boundary is whole in the next window.
 */
export function planWindows(
  tokenCounts: readonly number[],
  maxWords: number,
  room: number,
  overlap: number,
): WordWindow[] {
  const windows: WordWindow[] = [];
  const n = tokenCounts.length;
  let start = 0;
  while (start < n) {
    let end = start;
    let used = 0;
    while (
      end < n && end - start < maxWords && (end === start || used + tokenCounts[end] <= room)
    ) {
      used += tokenCounts[end];
      end++;
    }
    windows.push({ start, end });
    if (end >= n) break;
    start = end - Math.min(overlap, Math.floor((end - start) / 2));
  }
  return windows;
}
