/**
 * Takes a block of job ids off the queue's `ids` counter, whose data is the
 * next free id: a compare-and-set at the version read (the executor's
 * runPlanned), created on first use. Sent without a receipt: a write whose
 * reply was lost is planned again from a fresh read (never sent again as it
 * was: an obliterate may have made the counter again, back at the version
 * read) and takes the next block, so a lost reply costs one skipped block
 * of ids, nothing else (ids are never reused). A queue obliterated
 * meanwhile fails the create with NoNodeError: ids never bring it back.
 *
 * A block starts at `from` at the least: a producer whose queue was
 * obliterated and made again takes ids past all it took before, so none
 * it handed out in the old queue (or, not knowing it gone, in the new one)
 * is handed out again.
 */
import { NoNodeError } from '../../zk/errors.js';
import { ID_BLOCK_SIZE } from '../layout.js';
import type { ProtocolContext } from './context.js';
import { failWhenQueueGone } from './replan.js';
import type { ProtocolOp } from './units.js';

/** The first id of a new queue. */
export const FIRST_ID = 1;
/**
 * Plans of one block before TooManyConflictsError: every producer writes the
 * counter, so a burst of them (many processes adding their first job at once)
 * makes an unlucky one meet other blocks on many tries in a row; each is
 * another client's progress, never a livelock.
 */
export const COUNTER_PLAN_ATTEMPTS = 1000;

/** Moves the counter on by `size`, past `from` first; resolves with the first id of the block taken. */
export async function takeIds(store: ProtocolContext, size: number, from = FIRST_ID): Promise<number> {
  const { session, layout } = store;
  return store.executor.runPlanned(
    async () => {
      const current = await session.getData(layout.ids).catch((err: unknown) => {
        if (err instanceof NoNodeError) return undefined;
        throw err;
      });
      if (!current) {
        const first = Math.max(FIRST_ID, from);
        const op: ProtocolOp = { op: 'create', path: layout.ids, data: Buffer.from(String(first + size)) };
        return { answer: first, unit: { build: () => ({ ops: [op] }) } };
      }
      const { data, stat } = current;
      // An empty counter was written by the fixed-block allocator of earlier versions:
      // its last block ended at (version + 1) * ID_BLOCK_SIZE.
      const next = Math.max(from, data.length > 0 ? Number(data.toString()) : (stat.version + 1) * ID_BLOCK_SIZE);
      const op: ProtocolOp = {
        op: 'setData',
        path: layout.ids,
        data: Buffer.from(String(next + size)),
        version: stat.version,
      };
      return { answer: next, unit: { build: () => ({ ops: [op] }) } };
    },
    { receipt: false, onFailure: failWhenQueueGone, attempts: COUNTER_PLAN_ATTEMPTS },
  );
}
