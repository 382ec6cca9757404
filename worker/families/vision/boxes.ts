/**
 * Detection outputs to objects: closed-set scores (softmax over the classes, the last one being
 * "no object") or open-vocabulary scores (sigmoid per query), and boxes from normalised
 * (cx, cy, w, h) to integer pixels of the original image, clipped to it.
 */

/** A detected object: `bbox` is `[x, y, width, height]` in integer pixels. */
export interface Detection {
  label: string;
  score: number;
  bbox: [number, number, number, number];
}

/** Width and height in pixels. */
export interface Size {
  width: number;
  height: number;
}

/**
 * A normalised centre box as integer pixels: corners scaled by `frame` (the original pixels that
 * coordinates 0..1 span), rounded, clipped to `image`; width and height never negative.
 */
export function pixelBox(
  cx: number,
  cy: number,
  w: number,
  h: number,
  frame: Size,
  image: Size,
): [number, number, number, number] {
  const clip = (v: number, max: number) => Math.min(max, Math.max(0, Math.round(v)));
  const x0 = clip((cx - w / 2) * frame.width, image.width);
  const y0 = clip((cy - h / 2) * frame.height, image.height);
  const x1 = clip((cx + w / 2) * frame.width, image.width);
  const y1 = clip((cy + h / 2) * frame.height, image.height);
  return [x0, y0, Math.max(0, x1 - x0), Math.max(0, y1 - y0)];
}

/** Highest score first; equal scores keep query order. */
function byScore(found: (Detection & { at: number })[]): Detection[] {
  return found.sort((a, b) => b.score - a.score || a.at - b.at).map(({ label, score, bbox }) => ({
    label,
    score,
    bbox,
  }));
}

/** One image's raw outputs: `logits` `[queries, classes]` and `boxes` `[queries, 4]`. */
export interface ImageOutputs {
  logits: Float32Array;
  boxes: Float32Array;
  queries: number;
  classes: number;
}

/**
 * Closed-set decoding (DETR, YOLOS): per query, softmax over all classes, the no-object class
 * (the last) dropped, the best remaining class kept when its probability is above `threshold`.
 * `labels[i]` names class i.
 */
export function decodeClosedSet(
  out: ImageOutputs,
  labels: (i: number) => string,
  threshold: number,
  frame: Size,
  image: Size,
): Detection[] {
  const found: (Detection & { at: number })[] = [];
  const C = out.classes;
  for (let q = 0; q < out.queries; q++) {
    const row = out.logits.subarray(q * C, (q + 1) * C);
    let max = -Infinity;
    for (const v of row) if (v > max) max = v;
    let sum = 0;
    for (const v of row) sum += Math.exp(v - max);
    let best = 0;
    for (let c = 1; c < C - 1; c++) if (row[c] > row[best]) best = c;
    const score = Math.exp(row[best] - max) / sum;
    if (!(score > threshold)) continue;
    const [cx, cy, w, h] = out.boxes.subarray(q * 4, q * 4 + 4);
    found.push({ label: labels(best), score, bbox: pixelBox(cx, cy, w, h, frame, image), at: q });
  }
  return byScore(found);
}

/**
 * Open-vocabulary decoding (OWL-ViT, OWLv2): per box, the query with the highest logit; kept
 * when its sigmoid is above `threshold`, labelled with that query's text. `logits` is
 * `[boxes, queries]` here.
 */
export function decodeOpenSet(
  out: ImageOutputs,
  queries: readonly string[],
  threshold: number,
  frame: Size,
  image: Size,
): Detection[] {
  const found: (Detection & { at: number })[] = [];
  const Q = out.classes;
  for (let p = 0; p < out.queries; p++) {
    let best = 0;
    for (let q = 1; q < Q; q++) if (out.logits[p * Q + q] > out.logits[p * Q + best]) best = q;
    const score = 1 / (1 + Math.exp(-out.logits[p * Q + best]));
    if (!(score > threshold)) continue;
    const [cx, cy, w, h] = out.boxes.subarray(p * 4, p * 4 + 4);
    found.push({ label: queries[best], score, bbox: pixelBox(cx, cy, w, h, frame, image), at: p });
  }
  return byScore(found);
}
