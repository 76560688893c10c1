/**
 * BullMQ's `drained` event, logged once per time the queue runs dry. The
 * queue is dry from the last change of its claims on (the claims
 * directory's pzxid, which every claim and every finish moves on): the event
 * is logged in a transaction that writes that pzxid into the mark
 * `events/drained`, at the mark's version read, so two workers that saw the
 * same dry queue log it once, however late the second one looks.
 */
import { BadVersionError, NodeExistsError, NoNodeError } from '../zk/errors.js';
import { isDrained } from './listing.js';
import type { QueueStore } from './store.js';

/** Logs `drained` when the queue has nothing running and nothing waiting, unless it was logged for this time. */
export async function logDrained(store: QueueStore): Promise<boolean> {
  const { session, layout } = store;
  const claims = await session.exists(layout.claimsDir);
  if (!claims || claims.numChildren > 0) return false;
  const dry = String(claims.pzxid);
  const mark = await readMark(store);
  if (!mark || mark.data === dry) return false;
  if (!(await isDrained(store))) return false;
  const event = { event: 'drained', ts: Date.now() };
  const [result] = await store.executor.run(
    [
      {
        build: () => ({
          ops: [{ op: 'setData', path: layout.drainedMark, data: Buffer.from(dry), version: mark.version }],
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

/** The mark's data and version, created on first use; undefined while the queue is being deleted. */
async function readMark(store: QueueStore): Promise<{ data: string; version: number } | undefined> {
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
