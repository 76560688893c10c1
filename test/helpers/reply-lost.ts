/**
 * A queue's store whose session goes through a FaultProxy of its own, to lose
 * the reply of one write after the server applied it, beside a producer and
 * a store on plain sessions that look at what came of it: what the tests of a
 * call whose reply was lost share (is it sent again, and what does it answer).
 */
import { Session } from '@zkq/core';
import { QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { cleanups } from './cleanups.js';
import { proxied } from './proxied-worker.js';
import { queueEnv } from './queue.js';
import { prefixSession } from './znodes.js';

export async function storeAcrossProxy(t: { name?: string; after(fn: () => unknown): void }, name: string) {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const session = await Session.connect({ ...via.connection, namespace: `/${env.prefix}` });
  defer(() => session.close());
  /** Through the proxy: its calls are the ones whose replies are lost. */
  const mine = new QueueStore(session, name);
  /** On a plain session: what the others see. */
  const other = new QueueStore(await prefixSession(t, env), name);
  await other.init();
  const queue = new Queue(name, env);
  defer(() => queue.close());
  return { env, via, defer, proxy, mine, other, queue };
}
