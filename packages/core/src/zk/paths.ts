/**
 * Paths of a session: its namespace, and what ZooKeeper would refuse in a
 * path, refused before sending (a malformed path could escape the namespace).
 */
import { BadArgumentsError } from './errors.js';

export function normalizeNamespace(ns: string | undefined): string {
  if (!ns || ns === '/') return '';
  const trimmed = `/${ns.replace(/^\/+|\/+$/g, '')}`;
  if (trimmed.split('/').some((seg, i) => i > 0 && (seg === '' || seg === '.' || seg === '..'))) {
    throw new BadArgumentsError(`invalid namespace '${ns}'`);
  }
  return trimmed;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused here
const BAD_PATH = /\/(?:\.{1,2})?(?:\/|$)|[\u0000-\u001f\u007f]/;

/** Refuses what ZooKeeper would: relative, empty or dotted segments, a trailing slash, control characters. */
export function validatePath(path: string): void {
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new BadArgumentsError('a path must be a string starting with /', String(path));
  }
  if (path === '/') return;
  // one scan per path (every op of every request is checked): an empty, `.` or `..` segment, or a control character
  if (BAD_PATH.test(path)) {
    throw new BadArgumentsError('invalid path (empty, . or .. segment, trailing slash or control character)', path);
  }
}

/** The parent of `path` ('/' for a child of the root). */
export function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}

/** The last segment of `path`. */
export function lastSegment(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}
