/** Removing secret values (tokens, API keys) from text before it is logged or returned. */

/** Secrets shorter than this are not matched: they would also match ordinary text. */
const MIN_SECRET_LENGTH = 4;

/** A function replacing every occurrence of each secret in a text by `mark`. */
export function secretRedactor(
  secrets: readonly (string | undefined)[],
  mark = "***",
): (text: string) => string {
  const list = secrets.filter((s): s is string => !!s && s.length >= MIN_SECRET_LENGTH);
  if (list.length === 0) return (text) => text;
  return (text) => {
    for (const s of list) if (text.includes(s)) text = text.split(s).join(mark);
    return text;
  };
}
