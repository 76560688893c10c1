/**
 * The `drained` mark: `events/drained` holds the claims directory's pzxid
 * of the last time the queue was logged dry. BullMQ's `drained` event is
 * logged in the transaction that writes a newer pzxid into the mark, at the
 * mark's version read, so two workers that saw the same dry queue log it
 * once, however late the second one looks.
 */
import { BadVersionError, NodeExistsError, NoNodeError } from '../../zk/errors.js';
import type { ProtocolContext } from './context.js';

/** The mark as read: the pzxid it holds, and its version. */
export interface DrainedMark {
  data: string;
  version: number;
}

/** The mark's data and version, created on first use; undefined while the queue is being deleted. */
export async function readDrainedMark(store: ProtocolContext): Promise<DrainedMark | undefined> {
  const path = store.layout.drainedMark;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const { data, stat } = await store.session.getData(path);
      return { data: data.toString(), version: stat.version };
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
    }
    await store.session.create(path, Buffer.alloc(0)).catch((err) => {
      if (!(err instanceof NodeExistsError) && !(err instanceof NoNodeError)) throw err;
    });
  }
  return undefined;
}

/**
 * Logs `drained` for the dry time `dry` (a pzxid) by rewriting the mark read.
 * Resolves false when another look logged it first.
 */
export async function markDrained(store: ProtocolContext, mark: DrainedMark, dry: string): Promise<boolean> {
  const event = { event: 'drained', ts: Date.now() };
  const [result] = await store.executor.run(
    [
      {
        build: () => ({
          ops: [{ op: 'setData', path: store.layout.drainedMark, data: Buffer.from(dry), version: mark.version }],
          events: [event],
        }),
      },
    ],
    { receipt: false },
  );
  if (result?.ok) return true;
  if (result && !result.ok && result.error instanceof BadVersionError) return false; // logged by another look
  throw result?.error;
}
