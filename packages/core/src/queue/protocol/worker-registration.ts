/**
 * A live worker's registration: EPHEMERAL `workers/<id>` holding its info,
 * so operators (and BullMQ's getWorkers) see it while its session lives.
 * One left by the same worker's previous session is replaced (deleted at
 * the version read, in the create's transaction): it would vanish when that
 * session expires. Planned again when another writer went first (the
 * executor's runPlanned); one this session already holds (a create whose
 * reply was lost) is kept. In a queue obliterated meanwhile it fails with
 * NoNodeError, making nothing.
 */
import type { ProtocolContext } from './context.js';
import { failWhenQueueGone } from './replan.js';
import type { ProtocolOp } from './units.js';

/** Registers worker `id` with `info` (see the header). */
export async function registerWorker(store: ProtocolContext, id: string, info: Record<string, unknown>): Promise<void> {
  const { session } = store;
  const path = store.layout.worker(id);
  const data = Buffer.from(JSON.stringify(info));
  await store.executor.runPlanned(
    async () => {
      const stat = await session.exists(path);
      if (stat?.ephemeralOwner === session.sessionId) return { answer: undefined };
      const create: ProtocolOp = { op: 'create', path, data, mode: 'ephemeral' };
      const ops: ProtocolOp[] = stat ? [{ op: 'delete', path, version: stat.version }, create] : [create];
      return { answer: undefined, unit: { build: () => ({ ops }) } };
    },
    { receipt: false, onFailure: failWhenQueueGone },
  );
}
