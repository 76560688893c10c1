/**
 * Releasing a deduplication key (dedup-keys.ts says what a key is): by hand
 * (BullMQ's job.removeDeduplicationKey and Queue.removeDeduplicationKey),
 * and with the job it names when a removal takes that job.
 */
import { NoNodeError } from '../../zk/errors.js';
import type { JobRecord } from '../record.js';
import { dedupDeleteOp, dedupGenerationBumpOp, dedupGenerationCheckOp, keptJobCheckOp } from './builders.js';
import type { ProtocolContext } from './context.js';
import { dedupOf, look, readKey } from './dedup-keys.js';
import type { ProtocolOp } from './units.js';

/**
 * Deletes key `id` if it is live and keeps `jobId` (BullMQ's
 * job.removeDeduplicationKey); resolves 1 when it did, else 0.
 */
export async function removeDeduplicationKey(store: ProtocolContext, id: string, jobId: string): Promise<number> {
  await store.init();
  return store.executor.runPlanned(
    async () => {
      const seen = await look(store, id);
      if (!seen.read || !seen.live || seen.read.key.job !== jobId) return { answer: 0 };
      const ops = [dedupDeleteOp(store.layout, { id, version: seen.read.version })];
      if (seen.kept) ops.push(keptJobCheckOp(store.layout, jobId, seen.kept.version));
      if (seen.generation !== undefined) ops.push(dedupGenerationCheckOp(store.layout, seen.generation));
      return { answer: 1, unit: { build: () => ({ ops }) } };
    },
    // read back by its receipt: planned again after a lost reply, it found the key gone and answered 0
    { receipt: true },
  );
}

/**
 * Deletes key `id` whatever it holds (BullMQ's Queue.removeDeduplicationKey);
 * resolves 1 when a live key was deleted, else 0 (a stale key is deleted too).
 */
export async function deleteDeduplicationKey(store: ProtocolContext, id: string): Promise<number> {
  await store.init();
  const seen = await look(store, id);
  if (!seen.read) return 0;
  // a delete fenced by nothing: writes planned from a read of the key before it fail. With a receipt:
  // sent again after a lost reply, it would delete the key another add made since
  const ops = [dedupDeleteOp(store.layout, { id }), dedupGenerationBumpOp(store.layout)];
  const [result] = await store.executor.run([{ build: () => ({ ops }) }]);
  if (!result?.ok && !(result?.error instanceof NoNodeError)) throw result?.error;
  return result?.ok && seen.live ? 1 : 0;
}

/**
 * The ops that delete the key naming `record`'s job, for the transaction
 * that removes the job at the version read before (none if another job
 * holds it). The key is read after the job; the sweep may still delete it
 * (its ttl ran out) and a newer add create it again: the generation of keys,
 * read before the key, is checked.
 */
export async function releaseOps(store: ProtocolContext, record: JobRecord): Promise<ProtocolOp[]> {
  const o = dedupOf(record);
  if (!o) return [];
  const [dir, read] = await Promise.all([store.session.exists(store.layout.dedupDir), readKey(store, o.id)]);
  if (!dir || !read || read.key.job !== record.id) return [];
  return [
    dedupDeleteOp(store.layout, { id: o.id, version: read.version }),
    dedupGenerationCheckOp(store.layout, dir.version),
  ];
}
