/**
 * Removing secret values (tokens, API keys) from text before it is logged or returned, and
 * internal file-system paths from text returned to clients.
 */

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

/** An absolute file-system path (`/a/b/c`) that is not part of a URL, split into dirs and name. */
const ABSOLUTE_PATH = /(^|[\s'"`(=,:])\/((?:[^\s'"`(),:/]+\/)+)([^\s'"`(),:/]*)/g;

/**
 * `text` with every absolute file-system path reduced to its last part (`…/model.onnx`): what a
 * client may read of an error from the file system or ONNX Runtime. The log keeps the original.
 */
export function hidePaths(text: string): string {
  return text.replace(
    ABSOLUTE_PATH,
    (_all, lead: string, _dirs: string, name: string) => `${lead}…/${name}`,
  );
}
