/**
 * ZooKeeper's time: the mtime of a write to the queue's `clock` node
 * (created on first use). One clock for every process, whatever their own
 * say; on a session with `clock: 'process'` (tests), this process's.
 *
 * A single plain write, not a transaction: its reply's stat is the answer,
 * and sending it twice costs nothing.
 */
import { NodeExistsError, NoNodeError } from '../../zk/errors.js';
import type { ProtocolContext } from './context.js';

const EMPTY = Buffer.alloc(0);

/** ZooKeeper's time now (QueueStore.serverNow). */
export async function serverTime(ctx: Pick<ProtocolContext, 'session' | 'layout'>): Promise<number> {
  const { session, layout } = ctx;
  if (session.clock === 'process') return Date.now();
  try {
    return (await session.setData(layout.clock, EMPTY)).mtime;
  } catch (err) {
    if (!(err instanceof NoNodeError)) throw err;
  }
  await session.create(layout.clock).catch((err) => {
    if (!(err instanceof NodeExistsError)) throw err;
  });
  return (await session.setData(layout.clock, EMPTY)).mtime;
}
