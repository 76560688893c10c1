/**
 * Looking at a queue's nodes from outside, through a plain session on the
 * queue's prefix: how many nodes it holds, and (through `session.stats`) the
 * largest listing a walk of it met. Knows only that a queue lives under
 * `/<queue>` inside its prefix, nothing of the layout below.
 */
import { Session } from '@zkq/core';
import type { QueueTestEnv } from './queue.js';

/**
 * A plain session on the namespace a queue of `env` lives in (through
 * `connectionString`, a proxy's say, when given); closed after the test.
 */
export async function prefixSession(
  t: { after(fn: () => unknown): void },
  env: QueueTestEnv,
  connectionString = env.connection.connectionString,
): Promise<Session> {
  const session = await Session.connect({
    connectionString,
    sessionTimeout: env.connection.sessionTimeout,
    namespace: `/${env.prefix}`,
  });
  t.after(() => session.close());
  return session;
}

/** Nodes under `path`, itself included (0 when it does not exist). Every node is listed once. */
export async function countNodes(session: Session, path: string): Promise<number> {
  let names: string[];
  try {
    names = await session.getChildren(path);
  } catch {
    return 0; // gone meanwhile
  }
  const below = await Promise.all(names.map((n) => countNodes(session, `${path === '/' ? '' : path}/${n}`)));
  return 1 + below.reduce((a, b) => a + b, 0);
}

/** The largest number of children any node under `path` has, and where (read from a fresh walk). */
export async function largestListing(session: Session, path: string): Promise<{ children: number; path?: string }> {
  session.stats.maxChildren = 0;
  delete session.stats.maxChildrenPath;
  await countNodes(session, path);
  return { children: session.stats.maxChildren, path: session.stats.maxChildrenPath };
}
