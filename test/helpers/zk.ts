/** Test helpers: a session on the run's shared server under a unique root. */

import { setTimeout as sleep } from 'node:timers/promises';
import { Session, type SessionOptions } from '@zkq/core';
import { expireSession, sharedZooKeeper, uniqueRoot } from '@zkq/testing';

/** Opens a session on the shared test server under a fresh namespace; closes it after the test. */
export async function testSession(
  t: { after(fn: () => unknown): void; name?: string },
  options: Partial<SessionOptions> = {},
): Promise<Session> {
  const connectionString = options.connectionString ?? (await sharedZooKeeper());
  const session = await Session.connect({
    sessionTimeout: 4000,
    ...options,
    connectionString,
    namespace: options.namespace ?? uniqueRoot(t.name ?? 't'),
  });
  t.after(() => session.close());
  return session;
}

/** Polls `check` until it returns a truthy value or the deadline passes (then throws). */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 20_000, intervalMs = 25, what = 'condition' } = {},
): Promise<NonNullable<Awaited<T>>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<Awaited<T>>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    }
    await sleep(intervalMs);
  }
}

/** Resolves with the arguments of the next `event` emitted by `emitter`, or rejects after `timeoutMs`. */
export function nextEvent<A extends unknown[] = unknown[]>(
  emitter: { once(event: string, fn: (...args: A) => void): unknown },
  event: string,
  timeoutMs = 20_000,
): Promise<A> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no '${event}' within ${timeoutMs} ms`)), timeoutMs);
    emitter.once(event, (...args: A) => {
      clearTimeout(timer);
      resolve(args);
    });
  });
}

/**
 * Expires `session` on the server (the shared one unless `connectionString`
 * says otherwise) and waits until the session layer reports it lost.
 */
export async function expire(session: Session, connectionString?: string): Promise<void> {
  let noticed = false;
  const onLost = () => {
    noticed = true;
  };
  session.once('lost', onLost);
  // expiring may take a while on a loaded machine (each probe waits for the server): the client's
  // time to notice counts from when the server has expired the session
  await expireSession(connectionString ?? (await sharedZooKeeper()), session.credentials());
  if (noticed) return;
  session.off('lost', onLost);
  await nextEvent(session, 'lost', 20_000);
}
