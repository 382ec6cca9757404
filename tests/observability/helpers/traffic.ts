/** Request helpers shared by the observability tests. */
import { postJson } from "../../worker/harness.ts";

/** Text of `n` words from a fixed vocabulary (fixture tokenizers know these words). */
export function words(n: number, seed = 0): string {
  const vocab = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "cat", "sat"];
  return Array.from({ length: n }, (_, i) => vocab[(i * 7 + seed) % vocab.length]).join(" ");
}

/** `n` items of `wordsPerItem` words each. */
export function items(n: number, wordsPerItem = 8): { id: string; text: string }[] {
  return Array.from({ length: n }, (_, i) => ({ id: `i${i}`, text: words(wordsPerItem, i) }));
}

/** POST an encode request for `model` (JSON in and out); returns status, headers and body. */
export function encode(
  baseUrl: string,
  model: string,
  body: unknown,
  headers: Record<string, string> = {},
): ReturnType<typeof postJson> {
  return postJson(`${baseUrl}/v1/encode/${model}`, body, headers);
}
