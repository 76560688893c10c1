/**
 * ZooKeeper's time: the mtime of a write to the queue's `clock` node
 * (created on first use). One clock for every process, whatever their own
 * say; on a session with `clock: 'process'` (tests), this process's.
 */
import { NodeExistsError, NoNodeError } from '../../zk/errors.js';
import type { ProtocolContext } from './context.js';
import type { TxUnit, UnitResult } from './units.js';

const EMPTY = Buffer.alloc(0);

/** ZooKeeper's time now (QueueStore.serverNow). */
export async function serverTime(ctx: Pick<ProtocolContext, 'session' | 'layout' | 'executor'>): Promise<number> {
  const { session, layout, executor } = ctx;
  if (session.clock === 'process') return Date.now();
  const tick: TxUnit = { build: () => ({ ops: [{ op: 'setData', path: layout.clock, data: EMPTY }] }) };
  const write = async (unit: TxUnit) => (await executor.run([unit], { receipt: false }))[0] as UnitResult;
  let ticked = await write(tick);
  if (!ticked.ok && ticked.error instanceof NoNodeError) {
    const made = await write({ build: () => ({ ops: [{ op: 'create', path: layout.clock }] }) });
    if (!made.ok && !(made.error instanceof NodeExistsError)) throw made.error;
    ticked = await write(tick);
  }
  if (!ticked.ok) throw ticked.error;
  const written = ticked.results?.[0];
  if (written?.op !== 'setData') throw new Error('the clock write returned no stat'); // never: sent without a receipt
  return written.stat.mtime;
}
