/**
 * Whole branches of the tree: a path made with its missing parents, a node
 * deleted with everything under it.
 */
import { BadArgumentsError, NodeExistsError, NoNodeError } from './errors.js';
import { type RetryOptions, withRetry } from './retry.js';

/** What the branch helpers need of their session. */
export interface TreeSession {
  create(path: string): Promise<string>;
  getChildren(path: string): Promise<string[]>;
  delete(path: string): Promise<void>;
  deleteRecursive(path: string): Promise<void>;
}

/** A create's NodeExistsError is fine (the node is there); anything else is thrown again. */
export function ignoreExists(err: unknown): void {
  if (!(err instanceof NodeExistsError)) throw err;
}

/**
 * Creates `path` and any missing parents (persistent, empty), each create
 * retried under `retry`. With `under` (an ancestor of `path`), only the
 * nodes below it are created: a missing `under` fails with NoNodeError.
 */
export async function ensurePath(session: TreeSession, path: string, retry?: RetryOptions, under = ''): Promise<void> {
  if (under !== '' && !path.startsWith(`${under}/`)) throw new BadArgumentsError(`not under ${under}`, path);
  const parts = path.slice(under.length).split('/').filter(Boolean);
  let current = under;
  for (const part of parts) {
    current += `/${part}`;
    const target = current;
    await withRetry(() => session.create(target).then(() => undefined, ignoreExists), retry);
  }
}

/** Deletes `path` and everything under it, 64 children at a time; a missing node is fine. */
export async function deleteRecursive(session: TreeSession, path: string): Promise<void> {
  let children: string[];
  try {
    children = await session.getChildren(path);
  } catch (err) {
    if (err instanceof NoNodeError) return;
    throw err;
  }
  const base = path === '/' ? '' : path;
  for (let i = 0; i < children.length; i += 64) {
    await Promise.all(children.slice(i, i + 64).map((c) => session.deleteRecursive(`${base}/${c}`)));
  }
  if (path === '/') return;
  await session.delete(path).catch((err) => {
    if (!(err instanceof NoNodeError)) throw err;
  });
}
