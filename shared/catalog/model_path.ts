/** Model names in URL paths: sent raw (`org/name`) or percent-encoded (`org%2Fname`). */
import { invalidInput } from "../errors.ts";

/** Longest model name accepted from a path (ids are `org/name[:profile]`, far shorter). */
export const MAX_MODEL_NAME_LENGTH = 256;

/** The model name after `prefix` in a URL's path, percent-decoded once; 400 when malformed. */
export function modelFromPath(url: string, prefix: string): string {
  const raw = new URL(url).pathname.slice(prefix.length);
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    throw invalidInput("model name in the path is not valid percent-encoding");
  }
  if (name.length === 0 || name.length > MAX_MODEL_NAME_LENGTH) {
    throw invalidInput("model name is missing from the path or too long");
  }
  return name;
}
